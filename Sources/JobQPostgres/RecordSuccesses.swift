import Foundation
import JobQCore

/// A worker's start marks and self-contained successes in one round trip: one call of the
/// `jobq_record_successes` function (PostgreSQL migration 5), committed on its own, where the
/// shared SQL's transaction takes six (BEGIN, the lock, the store's facts, the UPDATE, the
/// events, COMMIT). The function, not a statement, because it must read whether a job has
/// dependents after it holds the write lock (see the migration).
extension ServerStore {
    func recordStartsAndSelfContainedSuccesses(
        starts: [ClaimedJob], successes: [SelfContainedSuccessRequest], workerID: String, notifyWorkers: Bool
    ) async throws -> (starts: Set<JobID>, successes: Set<JobID>)? {
        guard !starts.isEmpty || !successes.isEmpty else { return ([], []) }
        let now = StoreSQL.now()
        let marks = starts.sorted { $0.id < $1.id }
        let result = try await server.autocommit(
            RecordStartsAndSuccesses.self,
            [
                .text(workerID), .text(JSONText.string(workerID)), .real(now), .integer(notifyWorkers ? 1 : 0),
                .text(ArrayLiteral.integers(marks.map(\.id))),
                .text(ArrayLiteral.integers(marks.map { Int64($0.attempt) })),
                .text(ArrayLiteral.reals(marks.map { $0.startTime ?? now })),
                .text(ArrayLiteral.integers(successes.map(\.job.id))),
                .text(ArrayLiteral.integers(successes.map { Int64($0.job.attempt) })),
                .text(ArrayLiteral.texts(successes.map(\.resultJSON))),
                .text(ArrayLiteral.reals(successes.map(\.startTime)))
            ], line: .completions)
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

    fileprivate static let recordSQL = """
        SELECT job_id, written FROM jobq_record_successes($1, $2, CAST($3 AS double precision),
            CAST($4 AS integer) <> 0, CAST($5 AS bigint[]), CAST($6 AS integer[]), CAST($7 AS double precision[]),
            CAST($8 AS bigint[]), CAST($9 AS integer[]), CAST($10 AS text[]), CAST($11 AS double precision[]))
        """
}

private enum RecordStartsAndSuccesses: StatementText {
    static let sql = ServerStore.recordSQL
}
