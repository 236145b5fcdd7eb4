import Foundation
import JobQCore
import JobQSQL

/// A durable function's record on PostgreSQL: one prepared statement, one round trip, where the
/// store SQL's read transaction takes four (BEGIN, the steps, the job's cancel request, COMMIT)
/// and parses both statements each time. Every run of a function reads it before its first
/// step, so it is on the path of every function's attempt. One statement sees one snapshot,
/// as the transaction did.
extension ServerStore {
    func functionRecord(of job: JobID) async throws -> FunctionRecord {
        var arguments = ServerArguments<RecordOf>()
        arguments[.job] = .integer(job)
        let result = try await server.autocommit(ReadFunctionRecord.self, arguments.values, line: .claims)
        var record = FunctionRecord(steps: [], cancelRequested: nil)
        for values in result.rows {
            let row = SQLRow(names: Self.functionRecordColumns, values: values)
            record.cancelRequested = (row["cancel_requested"] as Double?).map(Date.init(timeIntervalSince1970:))
            // A job without steps: one row of NULLs beside its cancel request.
            guard row["position"] as Int64? != nil else { continue }
            record.steps.append(StoreSQL.functionStep(row))
        }
        return record
    }

    /// The statement's parameter: the job.
    fileprivate enum RecordOf: Int32, ServerParameter { case job = 1 }

    /// The names ``StoreSQL/functionStep(_:)`` reads, in the statement's column order.
    private static let functionRecordColumns = [
        "cancel_requested", "position", "name", "kind", "result", "children", "wake_at", "attempt", "started_at",
        "finished_at", "cancelled", "filter"
    ]

    fileprivate static let functionRecordSQL = """
        SELECT j.cancel_requested, s.position, s.name, s.kind, CAST(s.result AS text), CAST(s.children AS text),
            s.wake_at, s.attempt, s.started_at, s.finished_at, s.cancelled, s.filter
        FROM jobq_jobs AS j LEFT JOIN jobq_steps AS s ON s.job_id = j.id
        WHERE j.id = \(RecordOf.job)
        ORDER BY s.position
        """
}

private enum ReadFunctionRecord: StatementText {
    static let sql = ServerStore.functionRecordSQL
}
