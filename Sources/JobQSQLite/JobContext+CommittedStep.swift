import Foundation
import GRDB
import JobQCore
import JobQSQL

/// A durable function's step whose record commits in the application's own write transaction
/// on the store's SQLite file.
extension JobContext {
    /// Runs `body` once for this job in a write transaction of `writer` (the application's
    /// `DatabasePool` or `DatabaseQueue` on the store's file), and records the step in that same
    /// transaction: the rows `body` writes and the step's record commit together or not at all.
    /// Where a plain `step(_:_:)` is at least once, the database writes of this one are
    /// exactly once: a worker killed before the commit leaves neither, and the replay runs the
    /// step again; after the commit, the replay returns the recorded result without running it.
    ///
    /// ```swift
    /// let dbPool = try DatabasePool(path: "app.sqlite")   // the application's own
    /// let queue = try JobQueue(path: "app.sqlite")        // jobq's tables in the same file
    /// // In the executor's run(_:context:):
    /// let invoice = try await context.step("invoice", in: dbPool) { db in
    ///     try Invoice(order: order.id, total: order.total).inserted(db).id
    /// }
    /// ```
    ///
    /// The step is recorded after the steps the run recorded before it, and fenced on this
    /// attempt like any: when the attempt is no longer this worker's (cancelled, or taken over
    /// after its lease ran out), the transaction is rolled back and the function stops. `body`
    /// throwing rolls it back and fails the attempt with the step named
    /// (`FunctionStepFailed`), as a plain step's error does.
    ///
    /// - Throws: `JobQueueError.invalidState` when this job's store is not SQLite;
    ///   `JobQueueError.invalidInput` when `writer` is a connection to another file.
    public func step<T: Codable & Sendable>(
        _ name: String, in writer: some DatabaseWriter, _ body: @escaping @Sendable (Database) throws -> T
    ) async throws -> T {
        try await committedStep(name) { frame in
            guard let store = frame.store as? SQLiteStore else {
                throw JobQueueError.invalidState(
                    "step '\(name)' commits in a GRDB transaction, but job \(jobID)'s store is not SQLite: "
                        + "on PostgreSQL, pass the application's PostgresConnection instead")
            }
            return try await writer.write { db in
                let value: T
                do {
                    value = try body(db)
                } catch {
                    throw StepBodyFailed(error)
                }
                let record = try frame.record(value)
                let lost = try store.inCallersTransaction(db) { transaction in
                    try StoreSQL.recordSteps(transaction, [record], workerID: frame.workerID)
                }
                // Thrown out of the transaction, so that the application's rows go with it.
                guard lost.isEmpty else { throw FunctionAttemptLost() }
                db.afterNextTransaction(onCommit: { _ in store.callerCommitted() })
                return value
            }
        }
    }

    /// Runs `body`, which returns nothing, once for this job in a write transaction of `writer`,
    /// with the step's record, as the step that returns a value does; its record holds `null`.
    ///
    /// ```swift
    /// try await context.step("ledger", in: dbPool) { db in
    ///     try LedgerEntry(order: order.id, amount: -order.total).insert(db)
    /// }
    /// ```
    public func step(
        _ name: String, in writer: some DatabaseWriter, _ body: @escaping @Sendable (Database) throws -> Void
    ) async throws {
        _ = try await step(name, in: writer) { db -> NoResult in
            try body(db)
            return NoResult()
        }
    }
}
