import Foundation
import GRDB

/// Recording how attempts ended, with everything that follows from it in the same transaction:
/// the event, the batch's counters (and its callbacks), and tracking sets.
extension SQLiteStore {
    /// Records the outcomes of attempts in one transaction. Each update is fenced on the job's
    /// id, attempt, `running` state and the worker's token, so a worker whose lease expired
    /// (and whose job another worker took over, or an operator cancelled) changes nothing.
    /// Returns the ids whose outcome was refused by the fence.
    @discardableResult
    func complete(_ outcomes: [(job: ClaimedJob, outcome: AttemptOutcome)], workerID: String) async throws -> Set<JobID> {
        let now = Self.now()
        return try await write { db in
            var refused: Set<JobID> = []
            for (job, outcome) in outcomes {
                let recorded = try Self.record(
                    db, job: job, outcome: outcome,
                    fence: "WHERE id = ? AND state = 'running' AND worker_id = ? AND attempt = ?",
                    fenceArguments: [job.id, workerID, job.attempt], now: now)
                if !recorded { refused.insert(job.id) }
            }
            return refused
        }
    }

    /// Applies one outcome if the fence matches; returns false when it does not.
    @discardableResult
    static func record(
        _ db: Database, job: ClaimedJob, outcome: AttemptOutcome, fence: String, fenceArguments: StatementArguments,
        now: Double
    ) throws -> Bool {
        var data = JSONObjectBuilder()
        data.add("attempt", int: job.attempt)
        let kind: EventKind
        let finalState: JobState?
        switch outcome {
        case .succeeded(let resultJSON):
            try db.cachedStatement(
                sql: "UPDATE jobs SET state = 'succeeded', result = ?, error = NULL, finished_at = ?, lease_until = NULL \(fence)"
            ).execute(arguments: [resultJSON, now] + fenceArguments)
            kind = .succeeded
            finalState = .succeeded
            data.add("result", raw: resultJSON)
        case .retry(let error, let at, let timedOut):
            try db.cachedStatement(
                sql: "UPDATE jobs SET state = 'failed', error = ?, run_at = ?, lease_until = NULL \(fence)"
            ).execute(arguments: [error, at.timeIntervalSince1970] + fenceArguments)
            kind = timedOut ? .timedOut : .failed
            finalState = nil
            data.add("error", string: error)
            data.add("willRetry", bool: true)
            data.add("retryAt", date: at)
        case .dead(let error, let timedOut):
            try db.cachedStatement(
                sql: "UPDATE jobs SET state = 'dead', error = ?, finished_at = ?, lease_until = NULL \(fence)"
            ).execute(arguments: [error, now] + fenceArguments)
            kind = .dead
            finalState = .dead
            data.add("error", string: error)
            if timedOut { data.add("timedOut", bool: true) }
        case .released:
            try db.cachedStatement(
                sql: "UPDATE jobs SET state = 'ready', attempt = attempt - 1, worker_id = NULL, lease_until = NULL \(fence)"
            ).execute(arguments: fenceArguments)
            kind = .released
            finalState = nil
        case .snoozed(let until, let checkpointJSON):
            try db.cachedStatement(
                sql: """
                    UPDATE jobs SET state = 'scheduled', attempt = attempt - 1, run_at = ?, checkpoint = COALESCE(?, checkpoint),
                        snoozes = snoozes + 1, worker_id = NULL, lease_until = NULL \(fence)
                    """
            ).execute(arguments: [until.timeIntervalSince1970, checkpointJSON] + fenceArguments)
            kind = .snoozed
            finalState = nil
            data.add("until", date: until)
            data.add("snoozes", int: job.snoozes + 1)
            data.add("checkpoint", bool: checkpointJSON != nil)
        }
        guard db.changesCount > 0 else { return false }
        // A timed-out attempt that dies says so twice: the attempt timed out, and the job is dead.
        if case .dead(let error, true) = outcome {
            var timeout = JSONObjectBuilder()
            timeout.add("attempt", int: job.attempt)
            timeout.add("error", string: error)
            timeout.add("willRetry", bool: false)
            try appendEvent(db, job: job.id, kind: .timedOut, queue: job.queue, executor: job.executor, batch: job.batch, data: timeout.text, now: now)
        }
        try appendEvent(db, job: job.id, kind: kind, queue: job.queue, executor: job.executor, batch: job.batch, data: data.text, now: now)
        if case .succeeded(let resultJSON) = outcome {
            try trackingMemberSucceeded(db, job: job.id, executor: job.executor, name: job.name, resultJSON: resultJSON, now: now)
        }
        if let finalState, let batch = job.batch {
            try batchMemberFinished(db, batch: batch, state: finalState, now: now, job: job.id)
        }
        return true
    }
}

extension SQLiteStore {
    /// Stores an attempt's latest progress and writes a `progress` event, fenced like a
    /// completion: a report from an attempt that is no longer running changes nothing.
    func recordProgress(job: ClaimedJob, workerID: String, fraction: Double?, message: String?, dataJSON: String?) async throws {
        let now = Self.now()
        try await write { db in
            try db.cachedStatement(
                sql: """
                    UPDATE jobs SET progress = COALESCE(?, progress), progress_message = COALESCE(?, progress_message),
                        update_data = COALESCE(?, update_data)
                    WHERE id = ? AND state = 'running' AND worker_id = ? AND attempt = ?
                    """
            ).execute(arguments: [fraction, message, dataJSON, job.id, workerID, job.attempt])
            guard db.changesCount > 0 else { return }
            var data = JSONObjectBuilder()
            data.add("attempt", int: job.attempt)
            data.add("fraction", number: fraction)
            data.add("message", string: message)
            data.add("data", raw: dataJSON)
            try Self.appendEvent(
                db, job: job.id, kind: .progress, queue: job.queue, executor: job.executor, batch: job.batch, data: data.text, now: now)
        }
    }
}
