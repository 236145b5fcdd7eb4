import GRDB
import JobQSQL

/// The schema of a new in-memory store, migrated once per process and copied page by page into
/// each new one (SQLite's backup API): an app's test suite that opens a fresh
/// `JobQueue.inMemory()` per test pays for the migrations once, not per test. The copy is at
/// the latest version, so the migrator then finds nothing to apply.
///
/// ```swift
/// let store = try DatabaseQueue()
/// try InMemoryTemplate.copy(to: store)
/// ```
enum InMemoryTemplate {
    private static let template: Result<DatabaseQueue, any Error> = Result {
        var config = Configuration()
        config.label = "jobq-template"
        config.prepareDatabase { db in SQLiteStore.addFunctions(db) }
        let template = try DatabaseQueue(configuration: config)
        try SchemaMigrator(writer: template, path: nil).migrate(backup: false)
        return template
    }

    /// Makes `store`, a new empty in-memory database, a copy of the migrated template.
    static func copy(to store: DatabaseQueue) throws {
        try template.get().backup(to: store)
    }
}
