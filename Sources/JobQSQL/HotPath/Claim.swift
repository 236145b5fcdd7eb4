import Foundation
import JobQCore

/// The claim in a write transaction: every step of the ``ClaimLoop`` in one transaction
/// (SQLite's claim, alone or after a worker's completions), and the transaction a server's
/// claim of a limited queue takes.
extension SQLStore {
    /// Claims up to `limit` ready jobs from `queues`, in queue order, then by priority (higher
    /// first), run time and id, in one write transaction: it first makes due scheduled and
    /// retrying jobs ready, then claims each unpaused queue.
    ///
    /// A claimed job is `running` under the worker's lease with its attempt number taken, but
    /// its attempt has not started (`started_at` is NULL) until its start mark is written (with
    /// the worker's next completions); the first `startingNow` jobs (those the worker hands to
    /// free slots at once) are marked here, with their `started` events. A claimed job whose
    /// worker dies before its start is recorded gets its attempt back (``reclaimExpiredLeases()``).
    package func claimInTransaction(
        queues: [String], limit: Int, workerID: String, lease: Duration, startingNow: Int
    ) async throws -> [ClaimedJob] {
        guard limit > 0 else { return [] }
        let request = ClaimRequest(queues: queues, limit: limit, lease: lease, startingNow: startingNow)
        // Jobs made ready here are claimed here or found by other workers' own clocks.
        // Shared: a claim takes only ready rows no other claim holds (SKIP LOCKED on a server).
        return try await write(.short, audience: startingNow > 0 ? .followers : .nobody, lock: .shared) { db in
            try StoreSQL.claim(db, request, workerID: workerID)
        }
    }
}

extension StoreSQL {
    /// The claim of ``SQLStore/claimInTransaction(queues:limit:workerID:lease:startingNow:)``
    /// inside the caller's write transaction (its own, or one that records completions first).
    /// A failure rolls the whole claim back; it is said by the queue whose part failed.
    static func claim(_ db: some SQLTransaction, _ request: ClaimRequest, workerID: String) throws -> [ClaimedJob] {
        guard request.limit > 0 else { return [] }
        // The lease starts when the claim holds the write lock, not before it waited for it:
        // a claim delayed past its lease would otherwise be born expired and reclaimable.
        let now = StoreSQL.now()
        let leaseUntil = now + request.lease.inSeconds
        var loop = ClaimLoop(request, settings: try QueueSettings.read(db))
        while let step = loop.next() {
            do {
                switch step {
                case .promoteDue:
                    try promoteDue(db, now: now)
                    loop.promoted()
                case .claim(let part), .claimLimited(let part):
                    loop.took(try claim(db, part, workerID: workerID, leaseUntil: leaseUntil))
                }
            } catch {
                throw loop.failure(error, committed: false)
            }
        }
        return loop.claimed
    }

    /// One queue's part of a claim, in the caller's transaction: its ready jobs in claim order
    /// (under the queue's limits, read here when the part does not carry them), then their
    /// workflows' shared context and the start of the first `part.startingNow`.
    package static func claim(
        _ db: some SQLTransaction, _ part: ClaimLoop.QueuePart, workerID: String, leaseUntil: Double
    ) throws -> [ClaimedJob] {
        guard part.limit > 0 else { return [] }
        var limits = part.limits
        if !part.settingsRead {
            // A server's claim learnt the queue is limited from a statement of its own: the
            // settings are read again here, under this transaction's lock.
            let settings = try QueueSettings.read(db)
            if settings.paused.contains(part.queue) { return [] }
            limits = settings.limited[part.queue]
        }
        var claimed: [ClaimedJob]
        var rateStarts: [String: Int]?
        if let limits {
            let (jobs, taken) = try claimLimited(
                db, limits, limit: part.limit, startingNow: part.startingNow, workerID: workerID,
                leaseUntil: leaseUntil)
            claimed = jobs
            if limits.rate != nil, !jobs.isEmpty { rateStarts = taken }
        } else {
            claimed = try claimReady(
                db, queue: part.queue, limit: part.limit, workerID: workerID, leaseUntil: leaseUntil)
        }
        try readSharedContexts(db, &claimed)
        let starting = min(part.startingNow, claimed.count)
        guard starting > 0 else { return claimed }
        // Stamped now, not when the transaction began: a claim of a limited queue may have
        // waited for the queue's row lock while the jobs it took places from finished, and a
        // start must not precede the finish that made room for it. A rate's starts are stamped
        // by the clock its window is counted with.
        let stamp = rateStarts == nil ? StoreSQL.now() : try clock(db)
        db.stamp(stamp)
        _ = try markStarted(db, claimed[..<starting], workerID: workerID)
        if let rateStarts { try recordRateStarts(db, queue: part.queue, taken: rateStarts, startedAt: stamp) }
        for index in 0..<starting { claimed[index].startRecorded = true }
        return claimed
    }

    /// Workflow steps see the shared context as it is when they are claimed.
    private static func readSharedContexts(_ db: some SQLTransaction, _ claimed: inout [ClaimedJob]) throws {
        guard claimed.contains(where: { $0.workflowID != nil }) else { return }
        let context = try db.statement(sql: "SELECT context FROM jobq_workflows WHERE id = ?")
        for index in claimed.indices {
            guard let workflow = claimed[index].workflowID else { continue }
            context.bind(1, workflow)
            if try context.step() { claimed[index].sharedJSON = context.optionalString(0) }
            context.reset()
        }
    }

    /// Makes due scheduled and retrying jobs ready, inside a claim transaction; on a server,
    /// skipping rows another claim is promoting.
    static func promoteDue(_ db: some SQLTransaction, now: Double) throws {
        let promote = try db.statement(sql: promoteDueSQL[db.dialect])
        promote.bind(Promote.now, now)
        try promote.run()
    }

    private enum Promote: Int32, SQLParameter { case now = 1 }

    private static let promoteDueSQL = DialectSQL { d in
        switch d {
        case .sqlite:
            "UPDATE jobq_jobs SET state = 'ready' WHERE \(StoreSQL.dueState) AND run_at <= \(Promote.now)"
        case .postgres:
            """
            UPDATE jobq_jobs SET state = 'ready' WHERE id IN (
                SELECT id FROM jobq_jobs WHERE \(StoreSQL.dueState) AND run_at <= CAST(\(Promote.now) AS double precision)
                FOR UPDATE SKIP LOCKED)
            """
        }
    }

    /// Claims up to `limit` ready jobs of `queue` in claim order, passing over jobs past their
    /// deadline to start: read, then marked by id.
    ///
    /// Read first, the rows come straight off the jobs_claim_order index in claim order and
    /// the UPDATE carries only ids. The one statement `UPDATE ... WHERE id IN (SELECT ... LIMIT
    /// n) RETURNING ...` costs on SQLite: it gathers RETURNING rows, whole job rows here, in a
    /// temporary table before handing back the first, and returns them in no particular order.
    /// Nothing changes the rows between the read and the mark: SQLite's claim holds the only
    /// write lock, and a server claims here only limited queues, under the queue's row lock
    /// (its unlimited queues are claimed by a statement of its own).
    static func claimReady(
        _ db: some SQLTransaction, queue: String, limit: Int, workerID: String, leaseUntil: Double
    ) throws -> [ClaimedJob] {
        let read = try db.statement(sql: claimReadSQL)
        read.bind(ClaimRead.queue, queue)
        read.bind(ClaimRead.limit, limit)
        read.bind(ClaimRead.now, StoreSQL.now())
        var claimed: [ClaimedJob] = []
        claimed.reserveCapacity(limit)
        while try read.step() { claimed.append(ClaimedJob(read)) }
        read.reset()
        return try markClaimed(db, claimed, workerID: workerID, leaseUntil: leaseUntil)
    }

    /// A claim's read: the queue, how many jobs at most, and the time now (for deadlines to start).
    enum ClaimRead: Int32, SQLParameter {
        case queue = 1
        case limit, now
    }

    /// The ready jobs of a queue in claim order, at most a limit, with the attempt the claim
    /// gives them. Its ORDER BY is the column order of the jobs_claim_order index.
    static let claimReadSQL = """
        SELECT \(ClaimedJob.columns(attempt: "attempt + 1")) FROM jobq_jobs
        WHERE state = 'ready' AND queue = \(ClaimRead.queue) AND \(notExpired(at: "\(ClaimRead.now)"))
            AND \(executorNotPaused)
        ORDER BY \(claimOrder) LIMIT \(ClaimRead.limit)
        """

    /// Marks jobs just read as ready claimed by `workerID`; returns those it marked. On SQLite,
    /// under the write lock, that is all of them (anything else is a bug, and throwing rolls the
    /// claim back); on a server, those still ready.
    static func markClaimed(_ db: some SQLTransaction, _ jobs: [ClaimedJob], workerID: String, leaseUntil: Double)
        throws -> [ClaimedJob]
    {
        guard !jobs.isEmpty else { return [] }
        guard db.dialect == .sqlite else {
            let statement = try db.statement(sql: markClaimedByListSQL)
            statement.bind(ClaimMark.worker, workerID)
            statement.bind(ClaimMark.leaseUntil, leaseUntil)
            statement.bind(ClaimMark.firstID, jsonArray(jobs.map(\.id)))
            var marked: Set<JobID> = []
            while try statement.step() { marked.insert(statement.int64(0)) }
            statement.reset()
            return jobs.filter { marked.contains($0.id) }
        }
        for chunk in jobs.chunks(of: claimIDsPerUpdate) {
            let update = try db.statement(sql: markClaimedSQL[chunk.count])
            update.bind(ClaimMark.worker, workerID)
            update.bind(ClaimMark.leaseUntil, leaseUntil)
            for (offset, job) in chunk.enumerated() { update.bind(ClaimMark.firstID.rawValue + Int32(offset), job.id) }
            try update.run()
            guard db.changesCount == chunk.count else {
                throw JobQueueError.storeUnavailable(
                    "claim: \(chunk.count) jobs read as ready but \(db.changesCount) claimed; nothing was claimed, retry"
                )
            }
        }
        return jobs
    }

    /// Ids per SQLite UPDATE at most.
    private static let claimIDsPerUpdate = 128

    /// A claim mark's parameters: the worker, the lease's end, then from `firstID` the ids (on
    /// a server, one JSON array of them).
    private enum ClaimMark: Int32, SQLParameter {
        case worker = 1
        case leaseUntil, firstID
    }

    private static let markSet = """
        SET state = 'running', attempt = jobq_jobs.attempt + 1, worker_id = \(ClaimMark.worker),
            lease_until = \(ClaimMark.leaseUntil), started_at = NULL
        """

    /// `markClaimedSQL[n]` claims n jobs by id (SQLite).
    private static let markClaimedSQL: [String] = (0...claimIDsPerUpdate).map { count in
        let ids = (0..<count).map { "?\(ClaimMark.firstID.rawValue + Int32($0))" }.joined(separator: ", ")
        return "UPDATE jobq_jobs \(markSet) WHERE id IN (\(ids)) AND state = 'ready'"
    }

    /// The ids are joined as a set and the `ready` check is a CASE: a store whose statistics lag
    /// (a fresh backlog, never analyzed) was planned as a scan of every job testing each against
    /// the whole id list (0.6 s for a claim of a thousand), or of the partial index of ready jobs.
    private static let markClaimedByListSQL = """
        UPDATE jobq_jobs \(markSet)
        FROM unnest(CAST(translate(CAST(\(ClaimMark.firstID) AS text), '[]', '{}') AS bigint[])) AS picked(id)
        WHERE jobq_jobs.id = picked.id AND CASE WHEN jobq_jobs.state = 'ready' THEN 1 END = 1
        RETURNING jobq_jobs.id
        """
}
