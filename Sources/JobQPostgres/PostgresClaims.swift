import Foundation
import JobQ
import Logging
import PostgresNIO

/// The worker's claim on PostgreSQL: one transaction makes due jobs ready, then claims each
/// unpaused queue with one index-ordered `UPDATE ... WHERE id IN (SELECT ... FOR UPDATE SKIP
/// LOCKED) RETURNING`. Workers on many machines claim side by side: a row another claim has
/// locked is skipped, never waited for, and never handed out twice.
///
/// The semantics are the SQLite store's (``ClaimedJob``): a claimed job is `running` under the
/// worker's lease with its attempt number taken and no start recorded (`started_at` NULL); the
/// first `startingNow` jobs (for the worker's free slots) get their start and `started` event
/// in the claim's own transaction.
enum PostgresClaims {
    /// The columns of ``ClaimedJob/columns``, JSON as text.
    static let columns = """
        id, queue, executor, payload::text, priority, attempt, max_attempts, run_at, timeout, name, batch, checkpoint::text,
        snoozes, workflow_id, group_id, lane, failed_dependencies::text, tree_node
        """

    static func claim(
        queues: [String], limit: Int, workerID: String, lease: Duration, startingNow: Int,
        on connection: PostgresConnection, logger: Logger
    ) async throws -> [ClaimedJob] {
        guard limit > 0 else { return [] }
        return try await connection.withTransaction(logger: logger) { connection in
            // The lease starts when the claim runs, not when the worker asked for it.
            let now = Date().timeIntervalSince1970
            let leaseUntil = now + Double(lease.components.seconds) + Double(lease.components.attoseconds) / 1e18
            // Due jobs become ready; rows another claim is promoting are left to it.
            try await connection.query(
                """
                UPDATE jobs SET state = 'ready' WHERE id IN (
                    SELECT id FROM jobs WHERE state IN ('scheduled', 'failed') AND run_at <= \(now) FOR UPDATE SKIP LOCKED)
                """, logger: logger)
            var paused: Set<String> = []
            for try await name in try await connection.query("SELECT name FROM queues WHERE paused", logger: logger).decode(String.self) {
                paused.insert(name)
            }
            var claimed: [ClaimedJob] = []
            for queue in queues where claimed.count < limit && !paused.contains(queue) {
                let wanted = limit - claimed.count
                // The inner ORDER BY is the column order of jobs_claim_order: an index walk that
                // stops after `wanted` unlocked rows.
                let rows = try await connection.query(
                    PostgresQuery(
                        unsafeSQL: """
                            UPDATE jobs SET state = 'running', attempt = attempt + 1, worker_id = $1, lease_until = $2, started_at = NULL
                            WHERE id IN (
                                SELECT id FROM jobs WHERE state = 'ready' AND queue = $3
                                ORDER BY priority DESC, run_at, id LIMIT $4 FOR UPDATE SKIP LOCKED)
                            RETURNING \(columns)
                            """,
                        binds: try bindings(workerID, leaseUntil, queue, Int64(wanted))),
                    logger: logger)
                var batch: [ClaimedJob] = []
                for try await row in rows { batch.append(ClaimedJob(PostgresColumns(row.makeRandomAccess()))) }
                // RETURNING gives no order guarantee; restore the claim order.
                claimed += batch.sorted { ($0.priority, -$0.runAt, -$0.id) > ($1.priority, -$1.runAt, -$1.id) }
            }
            let starting = min(startingNow, claimed.count)
            guard starting > 0 else { return claimed }
            let ids = claimed[..<starting].map(\.id)
            try await connection.query(
                "UPDATE jobs SET started_at = \(now) WHERE id = ANY(\(ids)) AND worker_id = \(workerID)", logger: logger)
            try await PostgresEventLog.append(
                claimed[..<starting].map { job in
                    PostgresEventLog.Row(
                        job: job.id, kind: .started, queue: job.queue, executor: job.executor, batch: job.batch,
                        data: job.startedEventData(workerID: workerID), workflow: job.workflowID)
                }, now: now, on: connection, logger: logger)
            for index in 0..<starting {
                claimed[index].startRecorded = true
                claimed[index].startTime = now
            }
            return claimed
        }
    }

    private static func bindings(_ values: any PostgresEncodable & Sendable...) throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: values.count)
        for value in values { try bindings.append(value) }
        return bindings
    }
}

/// A PostgreSQL row read by column index, like a SQLite statement, so that each model type keeps
/// one row reader for both stores. JSON columns are selected as text.
struct PostgresColumns: ColumnReader {
    let row: PostgresRandomAccessRow

    init(_ row: PostgresRandomAccessRow) { self.row = row }

    /// nil for NULL (and for a value of another type, which the column lists rule out).
    private func value<T: PostgresDecodable>(_ column: Int32, _ type: T.Type) -> T? {
        let cell = row[Int(column)]
        guard cell.bytes != nil else { return nil }
        return try? cell.decode(T.self)
    }

    func int64(_ column: Int32) -> Int64 { value(column, Int64.self) ?? 0 }
    func double(_ column: Int32) -> Double { value(column, Double.self) ?? 0 }
    func optionalDouble(_ column: Int32) -> Double? { value(column, Double.self) }
    func optionalString(_ column: Int32) -> String? { value(column, String.self) }
    func optionalInt64(_ column: Int32) -> Int64? { value(column, Int64.self) }
}
