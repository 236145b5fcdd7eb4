import Foundation
import JobQCore
import JobQSQL

/// A worker's completions on PostgreSQL: start marks and self-contained successes in one round
/// trip, one call of the `jobq_record_successes` function (PostgreSQL migration 5) committed on
/// its own, where the store SQL's transaction takes six (BEGIN, the lock, the store's facts,
/// the UPDATE, the events, COMMIT). The function, not a statement, because it must read whether
/// a job has dependents after it holds the write lock (see the migration). What it leaves
/// (other outcomes, successes with consequences) is recorded by the store SQL in an exclusive
/// transaction after it. The batch is split as SQLite's is (``CompletionSplit``): a success's
/// start goes with it, and a refused start refuses its outcome.
extension ServerStore {
    func recordOutcomes(
        _ outcomes: [(job: ClaimedJob, outcome: AttemptOutcome)], starting: [ClaimedJob], workerID: String
    ) async throws -> (outcomes: Set<JobID>, starts: Set<JobID>) {
        let now = StoreSQL.now()
        let split = CompletionSplit(outcomes, starting: starting) { job, outcome in
            StoreSQL.SelfContainedSuccess.result(job: job, outcome: outcome) != nil
        }
        var successes: [SelfContainedSuccessRequest] = []
        for (job, outcome) in outcomes {
            guard let result = StoreSQL.SelfContainedSuccess.result(job: job, outcome: outcome) else { continue }
            let start = split.startsWithOutcome[job.id].map { $0.startTime ?? now }
            successes.append(SelfContainedSuccessRequest(job: job, resultJSON: result, startTime: start))
        }
        let written = try await recordStartsAndSelfContainedSuccesses(
            starts: split.separateStarts, successes: successes.sorted { $0.job.id < $1.job.id }, workerID: workerID,
            notifyWorkers: !outcomes.isEmpty)
        let refusedStarts = Set(split.separateStarts.lazy.map(\.id).filter { !written.starts.contains($0) })
        let rest = split.rest(refusedStarts: refusedStarts, written: written.successes)
        guard !rest.outcomes.isEmpty else { return split.refusals(refusedStarts: refusedStarts, refusedOutcomes: []) }
        let refused = try await recordInTransaction(rest.outcomes, starting: rest.starts, workerID: workerID)
        return split.refusals(refusedStarts: refusedStarts.union(refused.starts), refusedOutcomes: refused.outcomes)
    }

    /// Writes start marks (`starts`, each with its `startTime`) and self-contained successes
    /// (each with its start when it is written with it) in one round trip. Returns the ids of
    /// the starts and the successes it wrote: a start it did not write was refused by the
    /// fence; a success it did not write was refused, or has consequences, and is the caller's
    /// to record.
    private func recordStartsAndSelfContainedSuccesses(
        starts: [ClaimedJob], successes: [SelfContainedSuccessRequest], workerID: String, notifyWorkers: Bool
    ) async throws -> (starts: Set<JobID>, successes: Set<JobID>) {
        guard !starts.isEmpty || !successes.isEmpty else { return ([], []) }
        let now = StoreSQL.now()
        let marks = starts.sorted { $0.id < $1.id }
        var arguments = ServerArguments<Record>()
        arguments[.worker] = .text(workerID)
        arguments[.workerJSON] = .text(JSONText.string(workerID))
        arguments[.now] = .real(now)
        arguments[.notifyWorkers] = .integer(notifyWorkers ? 1 : 0)
        arguments[.startIDs] = .text(ArrayLiteral.integers(marks.map(\.id)))
        arguments[.startAttempts] = .text(ArrayLiteral.integers(marks.map { Int64($0.attempt) }))
        arguments[.startTimes] = .text(ArrayLiteral.reals(marks.map { $0.startTime ?? now }))
        arguments[.successIDs] = .text(ArrayLiteral.integers(successes.map(\.job.id)))
        arguments[.successAttempts] = .text(ArrayLiteral.integers(successes.map { Int64($0.job.attempt) }))
        arguments[.results] = .text(ArrayLiteral.texts(successes.map(\.resultJSON)))
        arguments[.successStartTimes] = .text(ArrayLiteral.reals(successes.map(\.startTime)))
        let result = try await server.autocommit(RecordStartsAndSuccesses.self, arguments.values, line: .completions)
        var written: (starts: Set<JobID>, successes: Set<JobID>) = ([], [])
        for values in result.rows {
            let row = SQLRow(names: [], values: values)
            if row.optionalString(1) == "started" {
                written.starts.insert(row.int64(0))
            } else {
                written.successes.insert(row.int64(0))
            }
        }
        commitObservers.callAll()
        return written
    }

    /// The success function's parameters, in its order: the worker (and as a JSON string), now,
    /// whether to wake idle workers; the start marks (ids, attempts, times); the successes (ids,
    /// attempts, results, start times or NULL).
    fileprivate enum Record: Int32, ServerParameter {
        case worker = 1
        case workerJSON, now, notifyWorkers, startIDs, startAttempts, startTimes, successIDs, successAttempts, results
        case successStartTimes
    }

    fileprivate static let recordSQL = """
        SELECT job_id, written FROM jobq_record_successes(\(Record.worker), \(Record.workerJSON),
            CAST(\(Record.now) AS double precision), CAST(\(Record.notifyWorkers) AS integer) <> 0,
            CAST(\(Record.startIDs) AS bigint[]), CAST(\(Record.startAttempts) AS integer[]),
            CAST(\(Record.startTimes) AS double precision[]), CAST(\(Record.successIDs) AS bigint[]),
            CAST(\(Record.successAttempts) AS integer[]), CAST(\(Record.results) AS text[]),
            CAST(\(Record.successStartTimes) AS double precision[]))
        """
}

/// A success to record in one round trip: the job, its result, and the time its attempt started
/// when its start mark is written with it (nil when the mark is already written).
private struct SelfContainedSuccessRequest: Sendable {
    let job: ClaimedJob
    let resultJSON: String
    let startTime: Double?
}

private enum RecordStartsAndSuccesses: StatementText {
    static let sql = ServerStore.recordSQL
}
