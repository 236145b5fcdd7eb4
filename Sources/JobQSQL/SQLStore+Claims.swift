import Foundation
import JobQCore

/// What a worker holds besides its claims (`HotPath/`): its leases (renewed, checked, reclaimed
/// when it dies), the outlook idle workers take before claiming, its row, and start marks.
extension SQLStore {
    /// Extends the leases of the given jobs that this worker still holds, and returns their
    /// ids; the caller stops the jobs it runs that are not among them (cancelled by an operator,
    /// or taken over after the lease expired).
    ///
    /// By id, never by worker alone: a job whose outcome this worker failed to write and gave up
    /// on must not be kept alive by renewals, or it would stay `running` for the worker's
    /// lifetime. A job claimed but not yet registered by the pool misses one renewal, which its
    /// fresh lease outlasts.
    package func renewLeases(_ ids: [JobID], workerID: String, lease: Duration) async throws -> Set<JobID> {
        guard !ids.isEmpty else { return [] }
        let list = StoreSQL.jsonArray(ids)
        // Exclusive although it changes only this worker's rows: the worker's completions, on
        // another connection, change the same rows in another order, and two shared writes
        // that did so could deadlock. Renewals are rare (a few per lease).
        return try await write(.short, audience: .nobody) { db in
            // From the moment of the write, like a claim's lease.
            let leaseUntil = StoreSQL.now() + lease.inSeconds
            return try Set(
                db.fetchAll(
                    JobID.self,
                    sql: """
                        UPDATE jobq_jobs SET lease_until = \(RenewLeases.leaseUntil) WHERE \(db.dialect.integer("id", in: "\(RenewLeases.ids)"))
                        AND \(StoreSQL.runningAttempt(of: "\(RenewLeases.worker)")) RETURNING id
                        """,
                    arguments: RenewLeases.arguments([.leaseUntil: leaseUntil, .ids: list, .worker: workerID])))
        }
    }

    /// Of the given jobs, those this worker no longer owns: a cheap read, so a pool can notice a
    /// cancellation within a fraction of a second without taking the write lock.
    package func lostJobs(_ ids: [JobID], workerID: String) async throws -> Set<JobID> {
        guard !ids.isEmpty else { return [] }
        let list = StoreSQL.jsonArray(ids)
        let owned = try await read(.short) { db in
            try Set(
                db.fetchAll(
                    JobID.self,
                    sql: """
                        SELECT id FROM jobq_jobs WHERE \(db.dialect.integer("id", in: "?"))
                        AND \(StoreSQL.runningAttempt(of: "?"))
                        """,
                    arguments: [list, workerID]))
        }
        return Set(ids).subtracting(owned)
    }

    /// Makes running jobs whose lease has expired runnable again (their worker died or hung), or
    /// dead when that was their last attempt. Returns how many were reclaimed.
    package func reclaimExpiredLeases() async throws -> Int {
        let now = StoreSQL.now()
        guard !reclaimsHeldOff else { return 0 }
        let anyExpired = try await read { db in
            try db.fetchOne(
                Bool.self, sql: "SELECT EXISTS (SELECT 1 FROM jobq_jobs WHERE state = 'running' AND lease_until < ?)",
                arguments: [now]) ?? false
        }
        guard anyExpired else { return 0 }
        return try await write { db in
            // Asked again here: a write that waited for the server to come back runs after it.
            guard !self.reclaimsHeldOff else { return 0 }
            let expired = try db.fetchRows(
                sql: """
                    SELECT \(ClaimedJob.columns), worker_id, started_at FROM jobq_jobs
                    WHERE state = 'running' AND lease_until < ?
                    """,
                arguments: [now])
            let facts = try StoreFacts.read(db)
            db.stamp(now)
            let suspects = try StoreSQL.possiblyStarted(
                db, unmarked: expired.filter { $0["started_at"] as Double? == nil })
            for row in expired {
                let job = ClaimedJob(row)
                let worker: String? = row["worker_id"]
                if row["started_at"] as Double? == nil {
                    // Never counted as an attempt: a suspect's start is committed before it
                    // runs, so without a mark it certainly never ran; any other job without a
                    // mark may have started, and becomes a suspect.
                    let reason =
                        "worker \(worker ?? "?") stopped before the attempt started; the attempt is not counted"
                    if !job.isSuspect, suspects.contains(job.id) {
                        try db.execute(
                            sql: "UPDATE jobq_jobs SET unstarted_deliveries = unstarted_deliveries + 1 WHERE id = ?",
                            arguments: [job.id])
                    }
                    try StoreSQL.record(
                        db, job: job, outcome: .released, fence: .anyWorker, facts: facts,
                        reason: reason)
                    continue
                }
                let error =
                    "attempt \(job.attempt) lost its lease: worker \(worker ?? "?") stopped renewing it (crashed, killed or hung)"
                let outcome: AttemptOutcome =
                    job.attempt >= job.maxAttempts
                    ? .dead(error: error, timedOut: false)
                    : .retry(error: error, at: Date(timeIntervalSince1970: now), timedOut: false)
                try StoreSQL.record(db, job: job, outcome: outcome, fence: .anyWorker, facts: facts)
            }
            return expired.count
        }
    }

    /// Whether any job on `queues` (paused queues aside) is ready, due or running; with
    /// `includingFuture`, whether any job there is unfinished at all.
    ///
    /// Each EXISTS reads one partial index (ready, running, or due-able jobs), so an idle
    /// pool's poll costs the same with a million finished jobs in the store as with none.
    package func hasUnfinishedWork(queues: [String], includingFuture: Bool) async throws -> Bool {
        let list = StoreSQL.jsonArray(queues)
        return try await read(.short) { db in
            if includingFuture {
                return try db.fetchOne(Bool.self, sql: StoreSQL.anyUnfinishedSQL[db.dialect], arguments: [list])
                    ?? false
            }
            // "Now" is read after the snapshot is taken (by the first statement), so every
            // commit the snapshot sees stamped its times before it: a job a reclaim just made
            // due (run_at = the reclaim's now) is due here. Read before the snapshot, a worker
            // waiting for its queues to empty could see that job as due a moment later, and stop.
            _ = try db.fetchOne(Int.self, sql: "SELECT id FROM jobq_jobs WHERE id = 0")
            let now = StoreSQL.now()
            return try db.fetchOne(Bool.self, sql: StoreSQL.anyUnfinishedNowSQL[db.dialect], arguments: [list, now])
                ?? false
        }
    }

    /// Whether a claim on `queues` would find a job now (ready, or due), and if not, when the
    /// next scheduled or retrying job falls due: a cheap read, so idle workers look without
    /// taking the write lock, and wake on the clock only when a job falls due.
    package func claimOutlook(queues: [String]) async throws -> ClaimOutlook {
        let now = StoreSQL.now()
        return try await read(.short) { db in try StoreSQL.claimOutlook(db, queues: queues, now: now) }
    }

    /// Counts ready and due jobs on `queues`: the backlog a worker's status line shows. Two
    /// index-bounded counts, so finished jobs are never visited.
    package func backlog(queues: [String]) async throws -> Int {
        let now = StoreSQL.now()
        let list = StoreSQL.jsonArray(queues)
        return try await read { db in
            try db.fetchOne(Int.self, sql: StoreSQL.backlogSQL[db.dialect], arguments: [list, now]) ?? 0
        }
    }

    // MARK: Workers

    package func registerWorker(id: String, queues: [String], concurrency: Int) async throws {
        let now = StoreSQL.now()
        let host = ProcessInfo.processInfo.hostName
        let pid = Int(ProcessInfo.processInfo.processIdentifier)
        let list = StoreSQL.jsonArray(queues)
        try await write(.long, audience: .nobody) { db in
            try CopyMarker.refuseWorkersWhileFilled(db)
            // Forget workers that have not been seen for a day.
            try db.execute(sql: "DELETE FROM jobq_workers WHERE heartbeat_at < ?", arguments: [now - 86_400])
            try db.execute(
                sql: """
                    INSERT INTO jobq_workers (id, host, pid, queues, concurrency, started_at, heartbeat_at)
                    VALUES (\(RegisterWorker.id), \(RegisterWorker.host), \(RegisterWorker.pid), \(RegisterWorker.queues), \(RegisterWorker.concurrency), \(RegisterWorker.now), \(RegisterWorker.now))
                    """,
                arguments: RegisterWorker.arguments([
                    .id: id, .host: host, .pid: pid, .queues: list, .concurrency: concurrency, .now: now
                ]))
        }
    }

    package func heartbeatWorker(id: String) async throws {
        let now = StoreSQL.now()
        // Shared: the worker's own row.
        try await write(.short, audience: .nobody, lock: .shared) { db in
            try db.execute(sql: "UPDATE jobq_workers SET heartbeat_at = ? WHERE id = ?", arguments: [now, id])
        }
    }

    package func removeWorker(id: String) async throws {
        try await write(.long, audience: .nobody) { db in
            try db.execute(sql: "DELETE FROM jobq_workers WHERE id = ?", arguments: [id])
        }
    }
}

extension StoreSQL {
    /// Records that these claimed attempts start now, with a `started` event each; fenced like
    /// a completion, so a job cancelled or taken over meanwhile is not started. Returns the ids
    /// the fence refused.
    static func markStarted(
        _ db: some SQLTransaction, _ jobs: some Collection<ClaimedJob>, workerID: String
    ) throws -> Set<JobID> {
        let events = db.events
        guard !jobs.isEmpty else { return [] }
        var accepted: Set<JobID> = []
        // Many to a statement, like self-contained successes; in id order, so that two writes that lock
        // the same rows lock them in the same order.
        for chunk in jobs.sorted(by: { $0.id < $1.id }).chunks(of: startMarksPerUpdate) {
            let rows = paddedRowCount(chunk.count)
            let update = try db.statement(sql: startMarkSQL[rows][db.dialect])
            update.bind(StartMark.worker, workerID)
            for offset in 0..<rows {
                let base = StartMark.firstRow.rawValue + Int32(3 * offset)
                let job = offset < chunk.count ? chunk[chunk.startIndex + offset] : nil
                update.bind(base, job?.id)
                update.bind(base + 1, job.map { Int64($0.attempt) })
                update.bind(base + 2, job.map { $0.startTime ?? events.now })
            }
            while try update.step() { accepted.insert(update.int64(0)) }
            update.reset()
        }
        var refused: Set<JobID> = []
        for job in jobs {
            if accepted.contains(job.id) {
                events.append(startedOf: job, workerID: workerID)
            } else {
                refused.insert(job.id)
            }
        }
        return refused
    }

    /// The row (of `table`, when the statement joins others) is a running attempt of the worker
    /// bound at `worker`: the fence of every statement that names a worker's jobs by id.
    ///
    /// Written as a CASE so that PostgreSQL's planner cannot answer it from jobs_leases (the
    /// partial index of running jobs) and looks the jobs up by id. Its statistics lag behind
    /// bursts of claims (a fresh store, a drain); judging jobs_leases nearly empty, it scanned
    /// all of it, entries of jobs that stopped running moments ago included, once per
    /// completion, and a worker's check of the jobs it holds took seconds.
    package static func runningAttempt(of worker: String, _ table: String? = nil) -> String {
        let column = table.map { "\($0)." } ?? ""
        return "CASE WHEN \(column)state = 'running' THEN \(column)worker_id END = \(worker)"
    }

    /// Rows per UPDATE at most (3 parameters each, 1 shared).
    static let startMarksPerUpdate = 64

    /// A start mark's parameters: the worker, then from `firstRow` each job's id, attempt and
    /// start time.
    enum StartMark: Int32, SQLParameter {
        case worker = 1
        case firstRow
    }

    /// `startMarkSQL[n]` marks n attempts started (NULLs in the rows that pad a batch to
    /// `paddedRowCount`). The VALUES list's columns are column1...column3 in both dialects.
    static let startMarkSQL: [DialectSQL] = (0...startMarksPerUpdate).map { count in
        DialectSQL { d in
            let rows = d.values(
                rows: count, from: StartMark.firstRow, types: ["bigint", "integer", "double precision"])
            return """
                UPDATE jobq_jobs SET started_at = v.column3 FROM (VALUES \(rows)) AS v
                WHERE jobq_jobs.id = v.column1 AND \(runningAttempt(of: "\(StartMark.worker)", "jobq_jobs"))
                    AND jobq_jobs.attempt = v.column2
                    AND jobq_jobs.started_at IS NULL
                RETURNING jobq_jobs.id
                """
        }
    }

    /// Of a dead worker's claimed jobs with no start mark, those that may have started anyway
    /// (run and died before the mark was written). Slots take buffered jobs in claim order, so
    /// what started is a prefix of it: the first few in claim order (twice the worker's slots,
    /// by the claim's own order of priority, run time and id) are suspects; the rest never left
    /// the buffer.
    ///
    /// A suspect is not punished: it goes back to `ready` with its attempt, and from then on its
    /// start is committed before it runs (one small transaction, for suspects only). So a job
    /// that kills its worker as it starts has its attempts counted from its second delivery on,
    /// and ends `dead` after them like any failing job, while a healthy job that merely sat at
    /// the head of a killed worker's buffer is never ended for it.
    static func possiblyStarted(_ db: some SQLTransaction, unmarked: [SQLRow]) throws -> Set<JobID> {
        var suspects: Set<JobID> = []
        for (worker, rows) in Dictionary(grouping: unmarked, by: { $0["worker_id"] as String? ?? "" }) {
            let slots =
                try db.fetchOne(Int.self, sql: "SELECT concurrency FROM jobq_workers WHERE id = ?", arguments: [worker])
                ?? 4
            let ordered = rows.map { ClaimedJob($0) }.sorted {
                $0.claimsBefore($1)
            }
            suspects.formUnion(ordered.prefix(2 * max(1, slots)).map(\.id))
        }
        return suspects
    }

    /// The order claims take a queue's ready jobs in: higher priority first, then earlier run
    /// time, then older id. The column order of the `jobs_claim_order` index (after the queue),
    /// so a claim walks the index and never sorts. `table`: the alias to qualify the columns with.
    package static func claimOrder(of table: String? = nil) -> String {
        let prefix = table.map { "\($0)." } ?? ""
        return "\(prefix)priority DESC, \(prefix)run_at, \(prefix)id"
    }
    package static let claimOrder = claimOrder()

    /// The claim's condition on a job's deadline to start: claims pass over a job whose
    /// deadline has passed, which the sweep (``SQLStore/expireOverdueJobs(skipping:)``) then ends.
    package static func notExpired(at now: String) -> String { "(expires_at IS NULL OR expires_at > \(now))" }

    /// The claim's condition on pauses: the job's executor is not paused, nor the whole store
    /// (``JobQueue/pause(executor:)``, ``JobQueue/pauseAll()``). Both subqueries are uncorrelated,
    /// so a statement reads them once, and with nothing paused each is a read of an empty range.
    package static let executorNotPaused = """
        (executor NOT IN (SELECT name FROM jobq_paused_executors) \
        AND NOT EXISTS (SELECT 1 FROM jobq_store_settings WHERE name = 'paused_all'))
        """

    /// The parameters of the outlook's and the backlog's questions: the queues (a JSON array)
    /// and the time now.
    enum QueuesNow: Int32, SQLParameter {
        case queues = 1
        case now
    }

    private static func unpaused(_ d: SQLDialect) -> String {
        "queue IN (\(d.texts(in: "\(QueuesNow.queues)"))) AND queue NOT IN (SELECT name FROM jobq_queues WHERE paused <> 0)"
    }

    /// ``unpaused(_:)`` and the job's executor claimable: what a claim could take. Only the
    /// ready question needs it (else a paused executor's ready jobs would look claimable and an
    /// idle worker would claim nothing again and again); due, waiting and running jobs of a
    /// paused executor are asked about without it, sparing the outlook, asked on every wake-up,
    /// three more pairs of subqueries (a due one is made ready by the next claim, then passed over).
    private static func claimable(_ d: SQLDialect) -> String { unpaused(d) + " AND " + executorNotPaused }

    // One EXISTS per state, each on the partial index that holds it (ready jobs by
    // jobs_claim_order, running ones by jobs_leases, due-able ones by jobs_due): never by
    // scanning a queue's history.
    private static func anyReady(_ d: SQLDialect) -> String {
        "EXISTS (SELECT 1 FROM jobq_jobs WHERE state = 'ready' AND \(claimable(d)))"
    }
    private static func anyRunning(_ d: SQLDialect) -> String {
        "EXISTS (SELECT 1 FROM jobq_jobs \(d.indexedBy("jobq_jobs_leases")) WHERE state = 'running' AND \(unpaused(d)))"
    }
    private static func anyDue(_ d: SQLDialect) -> String {
        """
        EXISTS (SELECT 1 FROM jobq_jobs \(d.indexedBy("jobq_jobs_due")) WHERE \(dueState)
            AND run_at <= \(QueuesNow.now) AND \(unpaused(d)))
        """
    }
    private static func anyWaiting(_ d: SQLDialect) -> String {
        """
        EXISTS (SELECT 1 FROM jobq_jobs \(d.indexedBy("jobq_jobs_due")) WHERE \(dueState) AND \(unpaused(d)))
            OR EXISTS (SELECT 1 FROM jobq_jobs \(d.indexedBy("jobq_jobs_waiting")) WHERE state = 'waiting' AND \(unpaused(d)))
        """
    }

    /// Something a claim would find now (a ready or due job), and the time the next scheduled
    /// or retrying job falls due (the first entry of jobs_due on these queues).
    static let claimOutlookSQL = DialectSQL { d in
        """
        SELECT \(anyReady(d)) OR \(anyDue(d)),
            (SELECT run_at FROM jobq_jobs \(d.indexedBy("jobq_jobs_due")) WHERE \(dueState) AND \(unpaused(d))
             ORDER BY run_at LIMIT 1)
        """
    }
    /// Work now: ready, running, or due (`StopCondition.queuesEmpty`).
    static let anyUnfinishedNowSQL = DialectSQL { d in "SELECT \(anyReady(d)) OR \(anyRunning(d)) OR \(anyDue(d))" }
    /// Work now or later: any job not finished, dependencies' waiting ones included
    /// (`StopCondition.allJobsFinished`).
    static let anyUnfinishedSQL = DialectSQL { d in "SELECT \(anyReady(d)) OR \(anyRunning(d)) OR \(anyWaiting(d))" }

    static let backlogSQL = DialectSQL { d in
        """
        SELECT (SELECT COUNT(*) FROM jobq_jobs WHERE state = 'ready' AND queue IN (\(d.texts(in: "\(QueuesNow.queues)"))))
             + (SELECT COUNT(*) FROM jobq_jobs \(d.indexedBy("jobq_jobs_due")) WHERE \(dueState)
                AND run_at <= \(QueuesNow.now) AND queue IN (\(d.texts(in: "\(QueuesNow.queues)"))))
        """
    }

    package static func claimOutlook(_ db: some SQLTransaction, queues: [String], now: Double) throws -> ClaimOutlook {
        let base = try unlimitedOutlook(db, queueList: jsonArray(queues), now: now)
        guard base.claimable else { return base }
        // Ready jobs of a limited queue with no place left are not worth a claim (a write):
        // places come back as jobs finish (a commit, which wakes idle workers) or as a rate's
        // window moves on (the time it does is reported as when to look again).
        let limited = try db.fetchRows(sql: queueSettingsSQL).map { LimitedQueue($0) }.filter {
            !$0.paused && $0.isLimited && queues.contains($0.name)
        }
        guard !limited.isEmpty else { return base }
        let names = Set(limited.map(\.name))
        let others = queues.filter { !names.contains($0) }
        if !others.isEmpty, try unlimitedOutlook(db, queueList: jsonArray(others), now: now).claimable { return base }
        var nextDue = base.nextDue
        for queue in limited {
            let due =
                try db.fetchOne(
                    Bool.self, sql: "SELECT \(anyDue(db.dialect))", arguments: [jsonArray([queue.name]), now]) ?? false
            // A due job is made ready by the claim, which then decides whether it has a place.
            if due { return base }
            let outlook = try limitedOutlook(db, queue, now: now)
            if outlook.claimable { return base }
            if let reopens = outlook.reopensAt { nextDue = min(nextDue ?? reopens, reopens) }
        }
        return ClaimOutlook(claimable: false, nextDue: nextDue)
    }

    /// ``claimOutlook(_:queues:now:)`` without regard to limits: one statement.
    private static func unlimitedOutlook(_ db: some SQLTransaction, queueList: String, now: Double) throws
        -> ClaimOutlook
    {
        let statement = try db.statement(sql: claimOutlookSQL[db.dialect])
        statement.bind(QueuesNow.queues, queueList)
        statement.bind(QueuesNow.now, now)
        defer { statement.reset() }
        guard try statement.step() else { return ClaimOutlook(claimable: false, nextDue: nil) }
        return ClaimOutlook(claimable: statement.int64(0) != 0, nextDue: statement.optionalDouble(1))
    }
}

/// A queue's settings as every claim reads them from its row in `queues`: paused, and its
/// limits (claimed by `StoreSQL.claimLimited`, `SQLStore+QueueLimits.swift`), read by every
/// claim (``QueueSettings``).
package struct LimitedQueue: Sendable {
    package let name: String
    package let paused: Bool
    package let concurrency: Int?
    /// Starts per period (seconds).
    package let rate: (starts: Int, period: Double)?
    package let partitioning: QueuePartitioning?

    /// The columns ``init(_:)`` reads, in the order a query selects them.
    enum Column: Int32, SQLColumns { case name, paused, concurrencyLimit, rateLimit, ratePeriod, partitionBy }

    static let columns = Column.list

    init(_ row: some ColumnReader) {
        typealias C = Column
        name = row.string(C.name)
        paused = row.int64(C.paused) != 0
        concurrency = row.optionalInt64(C.concurrencyLimit).map(Int.init)
        if let starts = row.optionalInt64(C.rateLimit), let period = row.optionalDouble(C.ratePeriod) {
            rate = (Int(starts), period)
        } else {
            rate = nil
        }
        // A stored form this jobq cannot read would have been refused when it was set.
        partitioning = row.optionalString(C.partitionBy).flatMap { try? QueuePartitioning(parsing: $0) }
    }

    var isLimited: Bool { concurrency != nil || rate != nil }

    var limits: QueueLimits {
        QueueLimits(
            concurrency: concurrency,
            rate: rate.map { RateLimit($0.starts, per: Duration(storedSeconds: $0.period)) },
            partitionBy: partitioning)
    }
}

extension StoreSQL {
    /// Every queue with a setting claims must respect: paused, limited, or both.
    static let queueSettingsSQL = """
        SELECT \(LimitedQueue.columns) FROM jobq_queues
        WHERE paused <> 0 OR concurrency_limit IS NOT NULL OR rate_limit IS NOT NULL
        """
}

/// The leases a worker renews, of the jobs it still runs.
private enum RenewLeases: Int32, SQLParameter, CaseIterable {
    case leaseUntil = 1
    case ids, worker
}

/// A worker's row.
private enum RegisterWorker: Int32, SQLParameter, CaseIterable {
    case id = 1
    case host, pid, queues, concurrency, now
}
