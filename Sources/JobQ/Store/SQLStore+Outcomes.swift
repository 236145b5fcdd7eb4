import Foundation

/// Recording how attempts ended, with everything that follows from it in the same transaction:
/// the event, the batch's counters (and its callbacks), and tracking sets.
extension SQLStore {
    /// Records the outcomes of attempts in one transaction, with the starts of the attempts
    /// about to run (a slot's next job starts as its last one is recorded). Each update is
    /// fenced on the job's id, attempt, `running` state and the worker's token, so a worker
    /// whose lease expired (and whose job another worker took over, or an operator cancelled)
    /// changes nothing. Returns the ids whose outcome, and those whose start, the fence refused.
    func complete(
        _ outcomes: [(job: ClaimedJob, outcome: AttemptOutcome)], starting: [ClaimedJob], workerID: String
    ) async throws -> (outcomes: Set<JobID>, starts: Set<JobID>) {
        try await write(.small) { db in
            // Read once the write lock is held: a start is stamped when it commits.
            let now = StoreSQL.now()
            var refused: Set<JobID> = []
            var events = StoreSQL.PendingEvents(now: now)
            // Starts first: a short job's start and its outcome often share a transaction.
            let refusedStarts = try StoreSQL.markStarted(db, starting, workerID: workerID, events: &events)
            if !outcomes.isEmpty {
                let facts = try StoreFacts.read(db)
                for (job, outcome) in outcomes {
                    let recorded = try StoreSQL.record(db, job: job, outcome: outcome, fence: .worker(workerID), facts: facts, events: &events)
                    if !recorded { refused.insert(job.id) }
                }
            }
            try events.flush(db)
            return (refused, refusedStarts)
        }
    }
}

extension StoreSQL {
    /// Which attempt an outcome may change.
    enum Fence {
        /// Only this worker's running attempt (`job.attempt`): a worker recording its own work.
        case worker(String)
        /// Whichever attempt is running: reclaiming an expired lease.
        case anyWorker

        /// The WHERE clause; its parameters are numbered from 20 so the SET clauses own 1...19.
        var clause: String {
            switch self {
            case .worker: "WHERE id = ?20 AND state = 'running' AND worker_id = ?21 AND attempt = ?22"
            case .anyWorker: "WHERE id = ?20 AND state = 'running'"
            }
        }

        func bind(_ statement: some SQLStatement, job: ClaimedJob) {
            statement.bind(20, job.id)
            if case .worker(let workerID) = self {
                statement.bind(21, workerID)
                statement.bind(22, job.attempt)
            }
        }
    }

    /// Applies one outcome if the fence matches; returns false when it does not. Its events join
    /// `events`, which the caller flushes before the transaction ends. `facts` are read once per
    /// transaction: they spare every success the lookups of features the store does not use.
    @discardableResult
    static func record<Transaction: SQLTransaction>(
        _ db: Transaction, job: ClaimedJob, outcome: AttemptOutcome, fence: Fence, facts: StoreFacts, events: inout PendingEvents,
        reason: String? = nil
    ) throws -> Bool {
        let now = events.now
        var data = JSONObjectBuilder()
        data.add("attempt", int: job.attempt)
        data.add("reason", string: reason)
        let kind: EventKind
        let finalState: JobState?
        let update: Transaction.Statement
        switch outcome {
        case .succeeded(let resultJSON, _):
            update = try db.statement(sql: "UPDATE jobs SET state = 'succeeded', result = ?1, error = NULL, finished_at = ?2, lease_until = NULL \(fence.clause)")
            update.bind(1, resultJSON)
            update.bind(2, now)
            kind = .succeeded
            finalState = .succeeded
            data.add("result", raw: resultJSON)
        case .retry(let error, let at, let timedOut):
            update = try db.statement(sql: "UPDATE jobs SET state = 'failed', error = ?1, run_at = ?2, lease_until = NULL \(fence.clause)")
            update.bind(1, error)
            update.bind(2, at.timeIntervalSince1970)
            kind = timedOut ? .timedOut : .failed
            finalState = nil
            data.add("error", string: error)
            data.add("willRetry", bool: true)
            data.add("retryAt", date: at)
        case .dead(let error, let timedOut):
            update = try db.statement(sql: "UPDATE jobs SET state = 'dead', error = ?1, finished_at = ?2, lease_until = NULL \(fence.clause)")
            update.bind(1, error)
            update.bind(2, now)
            kind = .dead
            finalState = .dead
            data.add("error", string: error)
            if timedOut { data.add("timedOut", bool: true) }
        case .released:
            update = try db.statement(sql: "UPDATE jobs SET state = 'ready', attempt = attempt - 1, worker_id = NULL, lease_until = NULL \(fence.clause)")
            kind = .released
            finalState = nil
        case .snoozed(let until, let checkpointJSON):
            update = try db.statement(sql: """
                    UPDATE jobs SET state = 'scheduled', attempt = attempt - 1, run_at = ?1, checkpoint = COALESCE(?2, checkpoint),
                        snoozes = snoozes + 1, worker_id = NULL, lease_until = NULL \(fence.clause)
                    """)
            update.bind(1, until.timeIntervalSince1970)
            update.bind(2, checkpointJSON)
            kind = .snoozed
            finalState = nil
            data.add("until", date: until)
            data.add("snoozes", int: job.snoozes + 1)
            data.add("checkpoint", bool: checkpointJSON != nil)
        }
        fence.bind(update, job: job)
        try update.run()
        guard db.changesCount > 0 else { return false }
        // A timed-out attempt that dies says so twice: the attempt timed out, and the job is dead.
        if case .dead(let error, true) = outcome {
            var timeout = JSONObjectBuilder()
            timeout.add("attempt", int: job.attempt)
            timeout.add("error", string: error)
            timeout.add("willRetry", bool: false)
            events.append(
                job: job.id, kind: .timedOut, queue: job.queue, executor: job.executor, batch: job.batch, data: timeout.text,
                workflow: job.workflowID)
        }
        events.append(job: job.id, kind: kind, queue: job.queue, executor: job.executor, batch: job.batch, data: data.text, workflow: job.workflowID)
        if case .succeeded(_, let writes) = outcome, !writes.isEmpty, let workflow = job.workflowID {
            try writeShared(db, workflow: workflow, writes)
        }
        // Tracking sets, batches, lanes, groups and dependents write their own events (and
        // jobs): after this job's.
        if facts.trackingMembers, case .succeeded(let resultJSON, _) = outcome {
            try events.flush(db)
            try trackingMemberSucceeded(db, job: job.id, executor: job.executor, name: job.name, resultJSON: resultJSON, now: now)
        }
        if let finalState, job.isMember || facts.dependencies {
            var error: String?
            switch outcome {
            case .dead(let message, _): error = message
            default: break
            }
            try settle(db, [FinishedJob(job, state: finalState, error: error)], facts: facts, events: &events)
        }
        return true
    }

    /// Writes keys of a workflow's shared context, each on its own, so that members writing
    /// different keys never lose each other's writes.
    static func writeShared(_ db: some SQLTransaction, workflow: WorkflowID, _ writes: [SharedWrite]) throws {
        guard let text = try db.fetchOne(String.self, sql: "SELECT context FROM workflows WHERE id = ?", arguments: [workflow]) else { return }
        var context = try OrderedJSON.parse(text)
        for write in writes { context.set(write.key, to: try OrderedJSON.parse(write.json)) }
        try db.execute(sql: "UPDATE workflows SET context = ? WHERE id = ?", arguments: [context.text, workflow])
    }
}

extension SQLStore {
    /// Stores an attempt's latest progress and writes a `progress` event, fenced like a
    /// completion: a report from an attempt that is no longer running changes nothing.
    func recordProgress(job: ClaimedJob, workerID: String, fraction: Double?, message: String?, dataJSON: String?) async throws {
        let now = StoreSQL.now()
        try await write(.small, audience: .followers) { db in
            try db.execute(
                sql: """
                    UPDATE jobs SET progress = COALESCE(?, progress), progress_message = COALESCE(?, progress_message),
                        update_data = COALESCE(?, update_data)
                    WHERE id = ? AND state = 'running' AND worker_id = ? AND attempt = ?
                    """,
                arguments: [fraction, message, dataJSON, job.id, workerID, job.attempt])
            guard db.changesCount > 0 else { return }
            var data = JSONObjectBuilder()
            data.add("attempt", int: job.attempt)
            data.add("fraction", number: fraction)
            data.add("message", string: message)
            data.add("data", raw: dataJSON)
            try StoreSQL.appendEvent(
                db, job: job.id, kind: .progress, queue: job.queue, executor: job.executor, batch: job.batch, data: data.text, now: now)
        }
    }
}
