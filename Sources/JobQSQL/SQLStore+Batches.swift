import Foundation
import JobQCore

/// Batches: counters kept in the transactions that finish their members, and a one-time firing.
extension SQLStore {
    package func createBatch(_ name: String, onComplete: JobRequest?, onSuccess: JobRequest?) async throws
        -> BatchStatus
    {
        for callback in [onComplete, onSuccess].compactMap({ $0 }) {
            try callback.validate()
            guard callback.payloadJSON.trimmingCharacters(in: .whitespaces).hasPrefix("{") else {
                throw JobQueueError.invalidInput(
                    "a batch callback's payload must be a JSON object (the summary is added under \"batch\"), got \(JSONText.preview(callback.payloadJSON))"
                )
            }
        }
        try Label.check(name, what: "a batch name")
        let now = StoreSQL.now()
        return try await write { db in
            if try StoreSQL.batch(db, name) != nil {
                throw JobQueueError.invalidState("batch '\(name)' already exists; pick another name")
            }
            try db.execute(
                sql: """
                    INSERT INTO jobq_batches (name, state, on_complete_executor, on_complete_payload, on_success_executor,
                        on_success_payload, callback_queue, created_at)
                    VALUES (\(CreateBatch.name), 'open', \(CreateBatch.completeExecutor), \(CreateBatch.completePayload), \(CreateBatch.successExecutor), \(CreateBatch.successPayload), \(CreateBatch.callbackQueue), \(CreateBatch.createdAt))
                    """,
                arguments: CreateBatch.arguments([
                    .name: name, .completeExecutor: onComplete?.executor,
                    .completePayload: onComplete.map { JSONText.minified($0.payloadJSON) },
                    .successExecutor: onSuccess?.executor,
                    .successPayload: onSuccess.map { JSONText.minified($0.payloadJSON) },
                    .callbackQueue: onComplete?.options.queue ?? onSuccess?.options.queue ?? JobOptions.defaultQueue,
                    .createdAt: now
                ]))
            return try StoreSQL.batch(db, name)!
        }
    }

    /// Closes a batch: it takes no more members, and fires now if every member has finished.
    package func closeBatch(_ name: String) async throws -> BatchStatus {
        let now = StoreSQL.now()
        return try await write { db in
            guard let batch = try StoreSQL.batch(db, name) else { throw StoreSQL.noBatch(name) }
            guard batch.state == .open else {
                throw JobQueueError.invalidState("batch '\(name)' is already \(batch.state.rawValue)")
            }
            try db.execute(
                sql: "UPDATE jobq_batches SET state = 'closed', closed_at = ? WHERE name = ?", arguments: [now, name])
            try StoreSQL.fireBatchIfDone(db, name: name, lastJob: nil, now: now)
            return try StoreSQL.batch(db, name)!
        }
    }

    package func batch(_ name: String) async throws -> BatchStatus? {
        try await read { db in try StoreSQL.batch(db, name) }
    }

}

extension StoreSQL {
    static func batch(_ db: some SQLTransaction, _ name: String) throws -> BatchStatus? {
        try db.fetchRow(sql: "SELECT \(batchColumns) FROM jobq_batches WHERE name = ?", arguments: [name]).map(
            batchStatus)
    }

    /// The columns ``batchStatus(_:)`` reads, in the order a query selects them.
    enum BatchColumn: Int32, SQLColumns {
        case name, state, total, succeeded, dead, cancelled, completeJobID, successJobID, createdAt, closedAt, firedAt
    }

    static let batchColumns = BatchColumn.list

    /// A row of `batches` selected with ``batchColumns``, as its status.
    static func batchStatus(_ row: some ColumnReader) -> BatchStatus {
        typealias C = BatchColumn
        return BatchStatus(
            name: row.string(C.name), state: BatchStatus.State(rawValue: row.string(C.state)) ?? .open,
            total: row.int(C.total), succeeded: row.int(C.succeeded), dead: row.int(C.dead),
            cancelled: row.int(C.cancelled), completeJobID: row.optionalInt64(C.completeJobID),
            successJobID: row.optionalInt64(C.successJobID),
            createdAt: Date(timeIntervalSince1970: row.double(C.createdAt)),
            closedAt: row.optionalDouble(C.closedAt).map(Date.init(timeIntervalSince1970:)),
            firedAt: row.optionalDouble(C.firedAt).map(Date.init(timeIntervalSince1970:)))
    }

    static func noBatch(_ name: String) -> JobQueueError {
        .notFound("no batch named '\(name)'; create it first (`jobq batch create \(name)`)")
    }

    /// Counts a new member in, inside the enqueue's transaction. Only open batches take members.
    static func addToBatch(_ db: some SQLTransaction, name: String) throws {
        let update = try db.statement(
            sql: "UPDATE jobq_batches SET total = total + 1 WHERE name = ? AND state = 'open'")
        update.bind(1, name)
        try update.run()
        guard db.changesCount == 1 else {
            if let batch = try batch(db, name) {
                throw JobQueueError.invalidState(
                    "batch '\(name)' is \(batch.state.rawValue) and takes no more jobs; create a new batch")
            }
            throw noBatch(name)
        }
    }

    /// Counts a member's final state, and fires the batch if it is closed and this was the last.
    static func batchMemberFinished(
        _ db: some SQLTransaction, batch name: String, state: JobState, now: Double, job: JobID? = nil
    ) throws {
        guard let column = ["succeeded": "succeeded", "dead": "dead", "cancelled": "cancelled"][state.rawValue] else {
            return
        }
        try db.execute(
            sql: "UPDATE jobq_batches SET \(column) = \(column) + 1 WHERE name = ? AND state != 'fired'",
            arguments: [name])
        try fireBatchIfDone(db, name: name, lastJob: job, now: now)
    }

    /// Un-counts a member that a retry brought back from a final state, if the batch has not fired.
    static func batchMemberReopened(_ db: some SQLTransaction, batch name: String, previous state: JobState) throws {
        guard let column = ["succeeded": "succeeded", "dead": "dead", "cancelled": "cancelled"][state.rawValue] else {
            return
        }
        try db.execute(
            sql: "UPDATE jobq_batches SET \(column) = \(column) - 1 WHERE name = ? AND state != 'fired'",
            arguments: [name])
    }

    static func fireBatchIfDone(_ db: some SQLTransaction, name: String, lastJob: JobID?, now: Double) throws {
        guard let batch = try batch(db, name), batch.state == .closed, batch.pending <= 0 else { return }
        let summary = try batchSummary(db, batch)
        let row = try db.fetchRow(
            sql: """
                SELECT callback_queue, on_complete_executor, on_complete_payload, on_success_executor, on_success_payload
                FROM jobq_batches WHERE name = ?
                """,
            arguments: [name])!
        let queue: String = row["callback_queue"]
        func enqueueCallback(executor: String?, payload: String?) throws -> JobID? {
            guard let executor, let payload else { return nil }
            let withSummary = try OrderedJSON.setting("batch", to: summary, in: payload)
            let request = try JobRequest(
                executor: executor, payloadJSON: withSummary, options: JobOptions(queue: queue))
            return try insert(request, db: db, now: now).id
        }
        let completeJob = try enqueueCallback(
            executor: row["on_complete_executor"], payload: row["on_complete_payload"])
        let successJob =
            batch.succeeded == batch.total
            ? try enqueueCallback(executor: row["on_success_executor"], payload: row["on_success_payload"]) : nil
        try db.execute(
            sql:
                "UPDATE jobq_batches SET state = 'fired', fired_at = \(FireBatch.firedAt), complete_job_id = \(FireBatch.completeJob), success_job_id = \(FireBatch.successJob) WHERE name = \(FireBatch.name)",
            arguments: FireBatch.arguments([
                .firedAt: now, .completeJob: completeJob, .successJob: successJob, .name: name
            ]))
        appendEvent(
            db, .batch(name: name, rawCounts: countsJSON(batch), completeJob: completeJob, successJob: successJob),
            job: lastJob, queue: nil, executor: nil, batch: name, now: now)
    }

    static func countsJSON(_ batch: BatchStatus) -> String {
        "{\"total\":\(batch.total),\"succeeded\":\(batch.succeeded),\"dead\":\(batch.dead),\"cancelled\":\(batch.cancelled)}"
    }

    /// `{"name", "counts", "results": {"<job id>": result or null}}`; the results are left out
    /// (with `"resultsOmitted": true`) when they would not fit in a payload.
    static func batchSummary(_ db: some SQLTransaction, _ batch: BatchStatus) throws -> String {
        let results = jsonObject(
            try db.fetchRows(
                sql: "SELECT id, result FROM jobq_jobs WHERE batch = ? ORDER BY id", arguments: [batch.name]
            )
            .map { row in
                (String(row["id"] as JobID), (row["result"] as String?).map(JSONText.minified))
            })
        var summary = JSONObjectBuilder()
        summary.add("name", string: batch.name)
        summary.add("counts", raw: countsJSON(batch))
        if results.utf8.count < JobRequest.maximumPayloadBytes / 2 {
            summary.add("results", raw: results)
        } else {
            summary.add("resultsOmitted", bool: true)
        }
        return summary.text
    }
}

/// A new batch and its callbacks.
private enum CreateBatch: Int32, SQLParameter, CaseIterable {
    case name = 1
    case completeExecutor, completePayload, successExecutor, successPayload, callbackQueue, createdAt
}

/// A batch fired, with its callback jobs.
private enum FireBatch: Int32, SQLParameter, CaseIterable {
    case firedAt = 1
    case completeJob, successJob, name
}
