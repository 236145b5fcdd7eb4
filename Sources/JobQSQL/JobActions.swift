import Foundation
import JobQCore

/// An operator's action on one job (cancel, retry, delete), inside a write transaction: what
/// `jobq cancel ID` does and what a bulk action does to each job it matches, with the same checks
/// and the same events. A refusal is decided before anything is written, so that a bulk action
/// can count it and go on in the same transaction.
extension StoreSQL {
    /// Why an action does not apply to a job; nothing was written.
    package struct Refusal: Error, Sendable {
        /// A short reason that groups refusals in a bulk action's report: `running`, `in a lane`.
        package var reason: String
        /// What the one-job action says, with what to do.
        package var message: String
    }

    /// Applies `action` to job `id`: the job as it is after, or why not.
    static func act(_ action: BulkAction, on id: JobID, _ db: some SQLTransaction, now: Double) throws -> Result<
        Job?, Refusal
    > {
        let job = try existingJob(db, id)
        switch action {
        case .cancel: return try cancel(job, db, now: now).map { $0 }
        case .retry: return try retry(job, db, now: now).map { $0 }
        case .delete: return try delete(job, db, now: now).map { nil }
        }
    }

    /// Cancels a job that has not finished. A running job's worker notices within a fraction of
    /// a second, cancels the task, and its late result is refused by the completion fence.
    ///
    /// A durable function that recorded a step is asked to cancel instead: it runs once more
    /// (woken now from a sleep, a wait or its calls), its sleeps, waits and calls throwing
    /// `FunctionCancelled` so that it can compensate, and then ends `cancelled`.
    static func cancel(_ job: Job, _ db: some SQLTransaction, now: Double) throws -> Result<Job, Refusal> {
        guard !job.state.isFinal else {
            return .failure(
                Refusal(
                    reason: "already \(job.state.rawValue)",
                    message: "job \(job.id) is already \(job.state.rawValue); only unfinished jobs can be cancelled"))
        }
        if try db.fetchRow(sql: "SELECT 1 AS recorded FROM jobq_steps WHERE job_id = ? LIMIT 1", arguments: [job.id])
            != nil
        {
            return .success(try requestCancel(job, db, now: now))
        }
        let row = try db.fetchRow(
            sql: """
                UPDATE jobq_jobs SET state = 'cancelled', finished_at = ?, lease_until = NULL
                WHERE id = ? RETURNING \(Job.columns)
                """,
            arguments: [now, job.id])
        let cancelled = Job(row!)
        let events = db.events(at: now)
        events.append(
            .ended(.cancelled, from: job.state.rawValue, why: nil), job: job.id, queue: job.queue,
            executor: job.executor, batch: job.batch, workflow: job.workflowID)
        try settle(db, [FinishedJob(cancelled)], facts: try StoreFacts.read(db))
        return .success(cancelled)
    }

    /// Asks a durable function to cancel: a running one learns it at its next sleep, wait or call;
    /// a parked or waiting one is made ready now (its edges to the jobs it called stay, met or
    /// not: the function reads its calls' state itself). Asked twice, the first time holds.
    private static func requestCancel(_ job: Job, _ db: some SQLTransaction, now: Double) throws -> Job {
        let row = try db.fetchRow(
            sql: """
                UPDATE jobq_jobs SET cancel_requested = COALESCE(cancel_requested, ?), awaiting = NULL,
                    state = CASE WHEN state IN ('scheduled', 'waiting', 'failed') THEN 'ready' ELSE state END,
                    run_at = CASE WHEN state IN ('scheduled', 'waiting', 'failed') THEN ? ELSE run_at END,
                    unmet = CASE WHEN state = 'waiting' THEN 0 ELSE unmet END
                WHERE id = ? RETURNING \(Job.columns)
                """,
            arguments: [now, now, job.id])
        appendEvent(
            db, .cancelling(from: job.state.rawValue), job: job.id, queue: job.queue, executor: job.executor,
            batch: job.batch, now: now, workflow: job.workflowID)
        return Job(row!)
    }

    /// Makes a failed, dead or cancelled job ready to run now. A dead job gets one more attempt
    /// than it has used; its attempt count is kept as history. A deadline to start
    /// (``JobOptions/expiresAt``) that has passed is dropped: the retry is the decision to run
    /// it (kept, the job would expire again unrun at the next sweep).
    static func retry(_ job: Job, _ db: some SQLTransaction, now: Double) throws -> Result<Job, Refusal> {
        let id = job.id
        guard [.failed, .dead, .cancelled].contains(job.state) else {
            return .failure(
                Refusal(
                    reason: job.state.rawValue,
                    message:
                        "job \(id) is \(job.state.rawValue); only failed, dead or cancelled jobs can be retried"))
        }
        if let workflow = job.workflowID, job.state != .failed {
            return .failure(
                Refusal(
                    reason: "a workflow step",
                    message: "job \(id) is a step of workflow \(workflow), which has counted its outcome; "
                        + "submit the workflow again instead"))
        }
        // Takes the key only from a holder that no longer holds it: nothing is written otherwise.
        if let key = job.uniqueKey, let holder = try takeUniqueKey(db, key, now: now), holder.id != id {
            return .failure(
                Refusal(
                    reason: "its unique key is held",
                    message: "job \(id) has unique key '\(key)', which job \(holder.id) (\(holder.state.rawValue)) "
                        + "holds now; cancel job \(holder.id) or let it finish, then retry job \(id)"))
        }
        let row = try db.fetchRow(
            sql: """
                UPDATE jobq_jobs SET state = 'ready', run_at = ?, finished_at = NULL, lease_until = NULL, unique_hold = unique_key,
                    unstarted_deliveries = 0,
                    worker_id = NULL, max_attempts = CASE WHEN max_attempts > attempt THEN max_attempts ELSE attempt + 1 END,
                    expires_at = CASE WHEN expires_at <= ? THEN NULL ELSE expires_at END
                WHERE id = ? RETURNING \(Job.columns)
                """,
            arguments: [now, now, id])
        let retried = Job(row!)
        appendEvent(
            db, .retried(from: job.state.rawValue, maxAttempts: retried.maxAttempts), job: id, queue: job.queue,
            executor: job.executor, batch: job.batch, now: now)
        if let batch = job.batch { try batchMemberReopened(db, batch: batch, previous: job.state) }
        return .success(retried)
    }

    /// Deletes a finished job and its events, as retention does; followers behind its events
    /// are told.
    static func delete(_ job: Job, _ db: some SQLTransaction, now: Double) throws -> Result<Void, Refusal> {
        let id = job.id
        guard job.state.isFinal else {
            return .failure(
                Refusal(
                    reason: job.state.rawValue,
                    message: "job \(id) is \(job.state.rawValue); only finished jobs can be deleted (cancel it first)"))
        }
        if let workflow = job.workflowID {
            return .failure(
                Refusal(
                    reason: "a workflow step",
                    message: "job \(id) is a step of workflow \(workflow), which still shows it; "
                        + "`jobq prune` removes a finished workflow's jobs with it"))
        }
        if let lane = job.lane {
            return .failure(
                Refusal(
                    reason: "in a lane",
                    message: "job \(id) is in lane '\(lane)', whose order it keeps; retention and `jobq prune` "
                        + "delete it once the lane no longer needs it"))
        }
        let free = try db.fetchOne(
            Bool.self, sql: "SELECT EXISTS (SELECT 1 FROM jobq_jobs WHERE id = ? AND \(unreferenced(now: "?")))",
            arguments: [id, now])
        guard free == true else {
            return .failure(
                Refusal(
                    reason: "still referred to",
                    message: "job \(id) is still referred to by unfinished work (a job waiting on it, a batch yet to "
                        + "fire, a tracking set, or the unique key it holds); delete it once that is done"))
        }
        try deleteJobs(db, [id])
        return .success(())
    }
}

extension Result where Failure == StoreSQL.Refusal {
    /// The value, or the refusal as the error a one-job action throws.
    func orThrow() throws -> Success {
        switch self {
        case .success(let value): return value
        case .failure(let refusal): throw JobQueueError.invalidState(refusal.message)
        }
    }
}
