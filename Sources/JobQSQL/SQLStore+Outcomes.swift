import Foundation
import JobQCore

/// Recording how attempts ended, with everything that follows from it in the same transaction:
/// the event, the batch's counters (and its callbacks), and tracking sets. The worker's batches
/// of completions are written by `HotPath/Completion.swift`.
extension StoreSQL {
    /// Which attempt an outcome may change.
    enum Fence {
        /// Only this worker's running attempt (`job.attempt`): a worker recording its own work.
        case worker(String)
        /// Whichever attempt is running: reclaiming an expired lease.
        case anyWorker

        /// The fence's parameters, numbered after those of any outcome's SET clause (see
        /// ``OutcomeParameter``), so that each UPDATE's text is built once.
        enum Parameter: Int32, SQLParameter {
            case job = 20
            case worker, attempt
        }

        /// An UPDATE's text under this fence.
        func sql(_ update: FencedUpdate) -> String {
            switch self {
            case .worker: update.worker
            case .anyWorker: update.anyWorker
            }
        }

        func bind(_ statement: some SQLStatement, job: ClaimedJob) {
            statement.bind(Parameter.job, job.id)
            if case .worker(let workerID) = self {
                statement.bind(Parameter.worker, workerID)
                statement.bind(Parameter.attempt, job.attempt)
            }
        }
    }

    /// The parameters of the outcomes' SET clauses.
    enum OutcomeParameter: Int32, SQLParameter {
        case result = 1
        case error, finishedAt, runAt, startedAt, checkpoint, awaiting
    }

    /// An UPDATE under each fence, built once, so that no drain builds statement text per job.
    struct FencedUpdate {
        let worker: String
        let anyWorker: String

        init(_ update: String) {
            typealias P = Fence.Parameter
            // See `runningAttempt(of:)` for why a CASE.
            worker = "\(update) WHERE id = \(P.job) AND \(runningAttempt(of: "\(P.worker)")) AND attempt = \(P.attempt)"
            anyWorker = "\(update) WHERE id = \(P.job) AND CASE WHEN state = 'running' THEN 1 END = 1"
        }
    }

    private typealias P = OutcomeParameter
    private static let succeededUpdate = FencedUpdate(
        """
        UPDATE jobq_jobs SET state = 'succeeded', result = \(P.result), error = NULL, finished_at = \(P.finishedAt),
            lease_until = NULL, started_at = COALESCE(\(P.startedAt), started_at)
        """)
    private static let retryUpdate = FencedUpdate(
        "UPDATE jobq_jobs SET state = 'failed', error = \(P.error), run_at = \(P.runAt), lease_until = NULL")
    private static let deadUpdate = FencedUpdate(
        "UPDATE jobq_jobs SET state = 'dead', error = \(P.error), finished_at = \(P.finishedAt), lease_until = NULL")
    private static let releasedUpdate = FencedUpdate(
        "UPDATE jobq_jobs SET state = 'ready', attempt = attempt - 1, worker_id = NULL, lease_until = NULL")
    private static let snoozedUpdate = FencedUpdate(
        """
        UPDATE jobq_jobs SET state = 'scheduled', attempt = attempt - 1, run_at = \(P.runAt),
            checkpoint = COALESCE(\(P.checkpoint), checkpoint), snoozes = snoozes + 1, worker_id = NULL,
            lease_until = NULL
        """)

    private static let parkedUpdate = FencedUpdate(
        """
        UPDATE jobq_jobs SET attempt = attempt - 1, awaiting = \(P.awaiting), worker_id = NULL, lease_until = NULL,
            state = CASE WHEN cancel_requested IS NULL THEN 'scheduled' ELSE 'ready' END,
            run_at = CASE WHEN cancel_requested IS NULL THEN \(P.runAt) ELSE run_at END
        """)
    private static let cancelledUpdate = FencedUpdate(
        """
        UPDATE jobq_jobs SET state = 'cancelled', error = \(P.error), finished_at = \(P.finishedAt), lease_until = NULL
        """)

    /// Applies one outcome if the fence matches; returns false when it does not. Its events join
    /// `events`, which the caller flushes before the transaction ends. `facts` are read once per
    /// transaction: they spare every success the lookups of features the store does not use.
    ///
    /// `start` is the same job's start mark (with its `startTime`) when a success records the
    /// start too: the worker's fence is the start mark's (the claim cleared `started_at`, and
    /// only this attempt's worker sets it), so one UPDATE writes both, and the `started` event
    /// goes before the `succeeded` one.
    @discardableResult
    static func record<Transaction: SQLTransaction>(
        _ db: Transaction, job: ClaimedJob, outcome: AttemptOutcome, fence: Fence, facts: StoreFacts,
        reason: String? = nil, start: ClaimedJob? = nil
    ) throws -> Bool {
        let events = db.events
        assert(start == nil || outcome.isSuccess, "only a success records its start in the same UPDATE")
        let now = events.now
        let data: EventData
        let finalState: JobState?
        let update: Transaction.Statement
        switch outcome {
        case .succeeded(let resultJSON, _):
            update = try db.statement(sql: fence.sql(succeededUpdate))
            update.bind(P.result, resultJSON)
            update.bind(P.finishedAt, now)
            update.bind(P.startedAt, start.map { $0.startTime ?? now })
            data = .succeeded(attempt: job.attempt, reason: reason, rawResult: resultJSON)
            finalState = .succeeded
        case .retry(let error, let at, let timedOut):
            update = try db.statement(sql: fence.sql(retryUpdate))
            update.bind(P.error, error)
            update.bind(P.runAt, at.timeIntervalSince1970)
            data = .retrying(
                attempt: job.attempt, reason: reason, error: error, retryAt: at.timeIntervalSince1970,
                timedOut: timedOut)
            finalState = nil
        case .dead(let error, let timedOut):
            update = try db.statement(sql: fence.sql(deadUpdate))
            update.bind(P.error, error)
            update.bind(P.finishedAt, now)
            data = .dead(attempt: job.attempt, reason: reason, error: error, timedOut: timedOut)
            finalState = .dead
        case .released:
            update = try db.statement(sql: fence.sql(releasedUpdate))
            data = .released(attempt: job.attempt, reason: reason)
            finalState = nil
        case .snoozed(let until, let checkpointJSON):
            update = try db.statement(sql: fence.sql(snoozedUpdate))
            update.bind(P.runAt, until.timeIntervalSince1970)
            update.bind(P.checkpoint, checkpointJSON)
            data = .snoozed(
                attempt: job.attempt, reason: reason, until: until.timeIntervalSince1970, snoozes: job.snoozes + 1,
                checkpoint: checkpointJSON != nil)
            finalState = nil
        case .parked(let until, let awaiting):
            update = try db.statement(sql: fence.sql(parkedUpdate))
            update.bind(P.runAt, until.timeIntervalSince1970)
            update.bind(P.awaiting, awaiting)
            data = .parked(attempt: job.attempt, until: until.timeIntervalSince1970, awaiting: awaiting)
            finalState = nil
        case .cancelled(let reason):
            update = try db.statement(sql: fence.sql(cancelledUpdate))
            update.bind(P.error, reason)
            update.bind(P.finishedAt, now)
            data = .ended(.cancelled, from: JobState.running.rawValue, why: reason)
            finalState = .cancelled
        }
        fence.bind(update, job: job)
        try update.run()
        guard db.changesCount > 0 else { return false }
        // A signal sent while the function ran, after it looked: the row is locked by the
        // UPDATE now, so the signal's transaction either committed before this read or wakes
        // the parked job itself.
        if case .parked(_, _?) = outcome { _ = try wakeIfSignalled(db, job: job.id, now: now) }
        if let start, case .worker(let workerID) = fence { events.append(startedOf: start, workerID: workerID) }
        // A timed-out attempt that dies says so twice: the attempt timed out, and the job is dead.
        if case .dead(let error, true) = outcome {
            events.append(
                .timedOutForGood(attempt: job.attempt, error: error), job: job.id, queue: job.queue,
                executor: job.executor, batch: job.batch, workflow: job.workflowID)
        }
        events.append(
            data, job: job.id, queue: job.queue, executor: job.executor, batch: job.batch, workflow: job.workflowID)
        if case .succeeded(_, let writes) = outcome, !writes.isEmpty, let workflow = job.workflowID {
            try writeShared(db, workflow: workflow, writes)
        }
        // Tracking sets, batches, lanes, groups and dependents write their own events (and
        // jobs): after this job's.
        if facts.trackingMembers, case .succeeded(let resultJSON, _) = outcome {
            try trackingMemberSucceeded(
                db, job: job.id, executor: job.executor, name: job.name, resultJSON: resultJSON, now: now)
        }
        if let finalState, job.isMember || facts.dependencies {
            var error: String?
            switch outcome {
            case .dead(let message, _), .cancelled(let message): error = message
            default: break
            }
            try settle(db, [FinishedJob(job, state: finalState, error: error)], facts: facts)
        }
        return true
    }

    /// Writes keys of a workflow's shared context, each on its own, so that members writing
    /// different keys never lose each other's writes.
    static func writeShared(_ db: some SQLTransaction, workflow: WorkflowID, _ writes: [SharedWrite]) throws {
        guard
            let text = try db.fetchOne(
                String.self, sql: "SELECT context FROM jobq_workflows WHERE id = ?", arguments: [workflow])
        else { return }
        var context = try OrderedJSON.parse(text)
        for write in writes { context.set(write.key, to: try OrderedJSON.parse(write.json)) }
        try db.execute(sql: "UPDATE jobq_workflows SET context = ? WHERE id = ?", arguments: [context.text, workflow])
    }
}

extension SQLStore {
    /// Stores an attempt's latest progress and writes a `progress` event, fenced like a
    /// completion: a report from an attempt that is no longer running changes nothing.
    package func recordProgress(
        job: ClaimedJob, workerID: String, fraction: Double?, message: String?, dataJSON: String?
    ) async throws {
        let now = StoreSQL.now()
        try await write(.short, audience: .followers) { db in
            try db.execute(
                sql: """
                    UPDATE jobq_jobs SET progress = COALESCE(\(RecordProgress.fraction), progress), progress_message = COALESCE(\(RecordProgress.message), progress_message),
                        update_data = COALESCE(\(RecordProgress.data), update_data)
                    WHERE id = \(RecordProgress.id) AND \(StoreSQL.runningAttempt(of: "\(RecordProgress.worker)")) AND attempt = \(RecordProgress.attempt)
                    """,
                arguments: RecordProgress.arguments([
                    .fraction: fraction, .message: message, .data: dataJSON, .id: job.id, .worker: workerID,
                    .attempt: job.attempt
                ]))
            guard db.changesCount > 0 else { return }
            StoreSQL.appendEvent(
                db, .progress(attempt: job.attempt, fraction: fraction, message: message, rawData: dataJSON),
                job: job.id, queue: job.queue, executor: job.executor, batch: job.batch, now: now)
        }
    }
}

/// Successes that change nothing but their own row and event (and, for a member of a workflow
/// group, its group's counters), recorded many to a statement.
///
/// Most of what a busy worker records is a success of a job that is in no batch or lane,
/// writes nothing to a workflow's context, and has no dependents or tracking sets to tell: a
/// drain is made of them, and so is a parallel group's fan-out. One UPDATE per job opened the jobs table's cursors and its
/// indexes' once per job; one UPDATE per 64 jobs (their ids, attempts, results and start marks
/// joined in as a VALUES list) does the same row work with the statement's setup shared.
/// Each row keeps the worker's fence: only this worker's running attempt is changed, and the
/// ids the UPDATE returns are the ones the fence accepted. A group's members that succeed in
/// one transaction move its counters once, by their number, after their own events; the
/// group finishes (and what follows from that) when that count completes it.
extension StoreSQL {
    /// A success ``record(_:job:outcome:fence:facts:events:reason:start:)`` would record with
    /// its own row and event alone, and its group's counters.
    package struct SelfContainedSuccess {
        let job: ClaimedJob
        let resultJSON: String
        /// The job's start mark when it is written in the same transaction (see `record`).
        let start: ClaimedJob?

        /// `nil` when the outcome is not a success or its recording has consequences.
        /// `hasDependents`: some job waits for this one (read in the same transaction; only
        /// exclusive writes add dependencies, so it stays true until commit).
        /// `countsIntoGroupAtMost`: its end matters to nothing but its group's counters (in no
        /// batch or lane, and of no tree node but a leaf).
        init?(
            job: ClaimedJob, outcome: AttemptOutcome, start: ClaimedJob?, facts: StoreFacts,
            countsIntoGroupAtMost: Bool, hasDependents: Bool
        ) {
            guard case .succeeded(let resultJSON, let writes) = outcome, writes.isEmpty || job.workflowID == nil,
                countsIntoGroupAtMost,
                !hasDependents, !facts.trackingMembers
            else { return nil }
            self.job = job
            self.resultJSON = resultJSON
            self.start = start
        }

        /// The result of a success that is self-contained unless the store says otherwise (the job has
        /// dependents, or tracking sets have members): one that is no member of a batch, group
        /// or lane and writes nothing to a workflow's context. Nil for any other outcome.
        package static func result(job: ClaimedJob, outcome: AttemptOutcome) -> String? {
            guard case .succeeded(let resultJSON, let writes) = outcome, writes.isEmpty || job.workflowID == nil,
                !job.isMember
            else { return nil }
            return resultJSON
        }
    }

    /// Of these jobs, those some job waits for: looked up only where the store has dependencies
    /// at all, so that a store using workflows still records the successes of its other jobs as
    /// self-contained ones.
    static func jobsWithDependents(_ db: some SQLTransaction, _ ids: [JobID], facts: StoreFacts) throws -> Set<JobID> {
        guard facts.dependencies, !ids.isEmpty else { return [] }
        return try Set(
            db.fetchAll(
                JobID.self,
                sql: """
                    SELECT DISTINCT depends_on FROM jobq_dependencies
                    WHERE \(db.dialect.integer("depends_on", in: "?"))
                    """,
                arguments: [jsonArray(ids.sorted())]))
    }

    /// Of these jobs of trees, those of leaf nodes: their success makes no more jobs, and
    /// counts into their group alone.
    static func leafTreeJobs(_ db: some SQLTransaction, _ jobs: [ClaimedJob]) throws -> Set<JobID> {
        let nodes = Set(jobs.compactMap(\.treeNode))
        guard !nodes.isEmpty else { return [] }
        let leaves = Set(
            try db.fetchAll(
                Int64.self,
                sql: "SELECT id FROM jobq_tree_nodes WHERE leaf = 1 AND \(db.dialect.integer("id", in: "?"))",
                arguments: [jsonArray(nodes.sorted())]))
        return Set(jobs.lazy.filter { $0.treeNode.map(leaves.contains) ?? false }.map(\.id))
    }

    /// Rows per UPDATE at most (4 parameters each, 2 shared).
    static let selfContainedSuccessesPerUpdate = 64

    /// Records `successes` of this worker's attempts, each with its `started` event (when it
    /// brings its start mark) and its `succeeded` event, in their order. Returns the ids the
    /// fence refused (cancelled or taken over meanwhile): nothing of theirs is written.
    static func recordSelfContainedSuccesses(
        _ db: some SQLTransaction, _ successes: [SelfContainedSuccess], workerID: String, facts: StoreFacts
    ) throws -> Set<JobID> {
        let events = db.events
        var accepted: Set<JobID> = []
        accepted.reserveCapacity(successes.count)
        // In id order: two writes that lock the same rows lock them in the same order.
        for chunk in successes.sorted(by: { $0.job.id < $1.job.id }).chunks(of: selfContainedSuccessesPerUpdate) {
            let rows = paddedRowCount(chunk.count)
            let update = try db.statement(sql: selfContainedSuccessSQL[rows][db.dialect])
            update.bind(SuccessBatch.now, events.now)
            update.bind(SuccessBatch.worker, workerID)
            for offset in 0..<rows {
                let base = SuccessBatch.firstRow.rawValue + Int32(4 * offset)
                let success = offset < chunk.count ? chunk[chunk.startIndex + offset] : nil
                update.bind(base, success?.job.id)
                update.bind(base + 1, success.map { Int64($0.job.attempt) })
                update.bind(base + 2, success?.resultJSON)
                update.bind(base + 3, success.flatMap { success in success.start.map { $0.startTime ?? events.now } })
            }
            if db.dialect == .sqlite {
                // No RETURNING on SQLite (it keeps the rows in a temporary b-tree until the
                // statement ends: half a microsecond a job); under the write lock the count of
                // rows changed says whether the fence refused any, and only then are they read.
                try update.run()
                if db.changesCount == chunk.count {
                    accepted.formUnion(chunk.lazy.map(\.job.id))
                } else {
                    accepted.formUnion(try recorded(db, Array(chunk), workerID: workerID, finishedAt: events.now))
                }
            } else {
                while try update.step() { accepted.insert(update.int64(0)) }
                update.reset()
            }
        }
        let alreadyRecorded =
            accepted.count == successes.count
            ? [] : try recorded(db, successes.filter { !accepted.contains($0.job.id) }, workerID: workerID)
        var refused: Set<JobID> = []
        // Each group's members succeeded now, in the order the groups first appear.
        var groups: [(group: Int64, members: Int)] = []
        for success in successes {
            let job = success.job
            guard accepted.contains(job.id) else {
                if !alreadyRecorded.contains(job.id) { refused.insert(job.id) }
                continue
            }
            if let start = success.start { events.append(startedOf: start, workerID: workerID) }
            events.append(
                .succeeded(attempt: job.attempt, rawResult: success.resultJSON), job: job.id, queue: job.queue,
                executor: job.executor, batch: job.batch, workflow: job.workflowID)
            if let group = job.groupID {
                if let index = groups.firstIndex(where: { $0.group == group }) {
                    groups[index].members += 1
                } else {
                    groups.append((group, 1))
                }
            }
        }
        var work: [FinishedJob] = []
        for (group, members) in groups {
            try groupMemberFinished(
                db, group: group, outcome: .succeeded, member: .jobs(members), cause: "", work: &work)
        }
        // What finishing a group ended or released in turn (its dependents, say).
        if !work.isEmpty { try settle(db, work, facts: facts) }
        return refused
    }

    /// Of `successes`, those this worker has recorded, attempt for attempt; with `finishedAt`,
    /// only those recorded at that time: the rows this write's UPDATE changed (a write's time is
    /// its own; an earlier write's rows have theirs). Without it, of successes the fence
    /// refused, those recorded earlier: a write tried again after its first try committed (its
    /// answer lost with the connection, or, on a server, the exclusive part of the same batch
    /// failing after this part committed). They are neither refused nor written twice.
    private static func recorded(
        _ db: some SQLTransaction, _ successes: [SelfContainedSuccess], workerID: String, finishedAt: Double? = nil
    )
        throws -> Set<JobID>
    {
        let attempts = Dictionary(
            successes.map { ($0.job.id, $0.job.attempt) }, uniquingKeysWith: { first, _ in first })
        let ids = jsonArray(attempts.keys.sorted())
        let read = """
            SELECT id, attempt FROM jobq_jobs WHERE \(db.dialect.integer("id", in: "?"))
            AND state = 'succeeded' AND worker_id = ?
            """
        let rows =
            try finishedAt.map { time in
                try db.fetchRows(sql: read + " AND finished_at = ?", arguments: [ids, workerID, time])
            } ?? db.fetchRows(sql: read, arguments: [ids, workerID])
        return Set(
            rows.compactMap { row in
                let id: JobID = row["id"]
                let attempt: Int = row["attempt"]
                return attempts[id] == attempt ? id : nil
            })
    }

    /// The parameters of a batch of successes: the time, the worker, then from `firstRow` each
    /// job's id, attempt, result and start time.
    enum SuccessBatch: Int32, SQLParameter {
        case now = 1
        case worker, firstRow
    }

    /// `selfContainedSuccessSQL[n]` records n successes (a start time is NULL when the start is
    /// already written; all NULL in the rows that pad a batch to `paddedRowCount`). The VALUES
    /// list's columns are column1...column4 in both dialects; PostgreSQL needs their types.
    static let selfContainedSuccessSQL: [DialectSQL] = (0...selfContainedSuccessesPerUpdate).map { count in
        DialectSQL { d in
            typealias P = SuccessBatch
            let rows = d.values(rows: count, from: P.firstRow, types: ["bigint", "integer", "json", "double precision"])
            return """
                UPDATE jobq_jobs SET state = 'succeeded', result = v.column3, error = NULL, finished_at = \(P.now),
                    lease_until = NULL, started_at = COALESCE(v.column4, jobq_jobs.started_at)
                FROM (VALUES \(rows)) AS v
                WHERE jobq_jobs.id = v.column1 AND \(runningAttempt(of: "\(P.worker)", "jobq_jobs")) AND jobq_jobs.attempt = v.column2
                \(d == .sqlite ? "" : "RETURNING jobq_jobs.id")
                """
        }
    }
}

/// A running attempt's progress.
private enum RecordProgress: Int32, SQLParameter, CaseIterable {
    case fraction = 1
    case message, data, id, worker, attempt
}
