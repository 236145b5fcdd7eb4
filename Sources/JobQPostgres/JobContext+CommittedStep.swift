import Foundation
import JobQCore
import JobQSQL
import PostgresNIO

/// A durable function's step whose record commits in a transaction on the application's own
/// PostgreSQL connection.
extension JobContext {
    /// Runs `body` once for this job in a transaction on `connection` (the application's own,
    /// to the store's database, outside a transaction block: the step sends `BEGIN` and
    /// `COMMIT`), and records the step in that same transaction: the rows `body` writes and the
    /// step's record commit together or not at all. Where a plain `step(_:_:)` is at least
    /// once, the database writes of this one are exactly once: a worker killed before the
    /// commit leaves neither, and the replay runs the step again; after the commit, the replay
    /// returns the recorded result without running it.
    ///
    /// ```swift
    /// // In the executor's run(_:context:), with the application's connection:
    /// let invoice = try await context.step("invoice", in: connection) { connection in
    ///     let rows = try await connection.query(
    ///         "INSERT INTO invoices (order_id, total) VALUES (\(order.id), \(order.total)) RETURNING id",
    ///         logger: logger)
    ///     for try await id in rows.decode(Int.self) { return id }
    ///     throw NonRetryableError("no invoice id returned")
    /// }
    /// ```
    ///
    /// The step is recorded after the steps the run recorded before it, and fenced on this
    /// attempt like any: when the attempt is no longer this worker's (cancelled, or taken over
    /// after its lease ran out), the transaction is rolled back and the function stops. `body`
    /// throwing rolls it back and fails the attempt with the step named
    /// (`FunctionStepFailed`), as a plain step's error does.
    ///
    /// - Throws: `JobQueueError.invalidState` when this job's store is not PostgreSQL;
    ///   `JobQueueError.invalidInput` when `connection` is to another database.
    public func step<T: Codable & Sendable>(
        _ name: String, in connection: PostgresConnection, _ body: (PostgresConnection) async throws -> T
    ) async throws -> T {
        try await committedStep(name) { frame in
            guard let server = (frame.store as? ServerStore)?.server else {
                throw JobQueueError.invalidState(
                    "step '\(name)' commits on a PostgresConnection, but job \(jobID)'s store is not PostgreSQL: "
                        + "on SQLite, pass the application's GRDB DatabasePool or DatabaseQueue instead")
            }
            let logger = server.logger
            try await connection.query("BEGIN", logger: logger)
            do {
                let value: T
                do {
                    value = try await body(connection)
                } catch {
                    throw StepBodyFailed(error)
                }
                let record = try frame.record(value)
                let lost = try await server.inCallersTransaction(connection, lock: .shared, audience: .followers) {
                    transaction in
                    try StoreSQL.recordSteps(transaction, [record], workerID: frame.workerID)
                }
                guard lost.isEmpty else { throw FunctionAttemptLost() }
                try await connection.query("COMMIT", logger: logger)
                return value
            } catch {
                // The application's rows go with the step's record; a failed COMMIT has ended
                // the transaction already, and this ROLLBACK only warns.
                _ = try? await connection.query("ROLLBACK", logger: logger)
                throw error
            }
        }
    }

    /// Runs `body`, which returns nothing, once for this job in a transaction on `connection`,
    /// with the step's record, as the step that returns a value does; its record holds `null`.
    ///
    /// ```swift
    /// try await context.step("ledger", in: connection) { connection in
    ///     try await connection.query("INSERT INTO ledger (order_id, amount) VALUES (\(order.id), \(-order.total))", logger: logger)
    /// }
    /// ```
    public func step(
        _ name: String, in connection: PostgresConnection, _ body: (PostgresConnection) async throws -> Void
    ) async throws {
        _ = try await step(name, in: connection) { connection -> NoResult in
            try await body(connection)
            return NoResult()
        }
    }
}
