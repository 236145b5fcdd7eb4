import GRDB
import JobQCore
import JobQSQL

extension DataMigrationContext {
    /// `DataMigrationContext.write(_:)` for a step that wants GRDB's `Database` on a SQLite
    /// store (its query interface, records, `db.create(table:)`): the step's changes and its
    /// record commit together, or not at all.
    ///
    /// ```swift
    /// try await context.writeSQLite { db in
    ///     try db.create(table: "notes") { t in t.autoIncrementedPrimaryKey("id"); t.column("title", .text) }
    /// }
    /// ```
    ///
    /// - Throws: `JobQueueError.invalidInput` on a store that is not SQLite (nothing is
    ///   changed or recorded); use `DataMigrationContext.write(_:)` there.
    @discardableResult
    public func writeSQLite<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        let (migrator, version) = (migrator, version)
        return try await write { transaction in
            guard let sqlite = transaction.transaction as? SQLiteTransaction else {
                throw JobQueueError.invalidInput(
                    "data migration '\(migrator)' step \(version) called context.writeSQLite on a store that is not SQLite; "
                        + "use context.write, which works on every store")
            }
            return try body(sqlite.db)
        }
    }
}
