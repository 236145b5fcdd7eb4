import Foundation
import GRDB
import Testing

@testable import JobQCore
@testable import JobQSQL
@testable import JobQSQLite

/// jobq inside an application's own SQLite database: its tables have the `jobq_` prefix, so the
/// application's `jobs`, `events`, `workers` and `schema_migrations` stay as they are.
@Suite("jobq in the application's database (SQLite)")
struct AppDatabaseTests {
    /// The application's tables, with rows, named as jobq's were before the prefix.
    static func appDatabase() throws -> TemporaryStore {
        let store = try TemporaryStore()
        try DatabaseQueue(path: store.path).write { db in
            try db.execute(
                sql: """
                    CREATE TABLE jobs (id INTEGER PRIMARY KEY, title TEXT NOT NULL, state TEXT);
                    INSERT INTO jobs (title, state) VALUES ('plumber', 'open'), ('painter', 'filled');
                    CREATE TABLE events (id INTEGER PRIMARY KEY, name TEXT);
                    INSERT INTO events (name) VALUES ('launch');
                    CREATE TABLE workers (name TEXT PRIMARY KEY, queues TEXT);
                    INSERT INTO workers VALUES ('ann', 'day');
                    CREATE TABLE schema_migrations (version TEXT PRIMARY KEY);
                    INSERT INTO schema_migrations VALUES ('20240101120000'), ('20240202120000');
                    PRAGMA user_version = 7;
                    """)
        }
        return store
    }

    /// Everything of the application's: its tables' rows and schema, and its `user_version`.
    static func appSnapshot(_ path: String) throws -> String {
        try DatabaseQueue(path: path).read { db in
            var text = "user_version \(try Int.fetchOne(db, sql: "PRAGMA user_version") ?? -1)\n"
            for table in ["jobs", "events", "workers", "schema_migrations"] {
                text +=
                    try String.fetchOne(db, sql: "SELECT sql FROM sqlite_master WHERE name = ?", arguments: [table])
                    ?? "missing \(table)"
                for row in try Row.fetchAll(db, sql: "SELECT * FROM \(table) ORDER BY 1") { text += "\n\(row)" }
                text += "\n"
            }
            return text
        }
    }

    @Test func jobqMigratesIntoTheAppsDatabaseWorksAndLeavesItsTablesAlone() async throws {
        let store = try Self.appDatabase()
        let before = try Self.appSnapshot(store.path)
        #expect(try JobQueue.schemaStatus(path: store.path).currentVersion == 0, "the app's tables are not a store")

        let queue = try JobQueue(path: store.path)
        let job = try await queue.enqueue(Sum.self, .init(a: 2, b: 3))
        try await WorkerPool(queue: queue, executors: [Sum()], options: quickOptions()).run()
        #expect(try await queue.job(job.id)?.state == .succeeded)
        #expect(try await queue.events(after: 0).map(\.kind).contains(.succeeded))

        #expect(
            try Self.appSnapshot(store.path) == before, "the application's tables and user_version are as they were")
        let names = try await DatabaseQueue(path: store.path).read { db in
            try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE name NOT LIKE 'sqlite\\_%' ESCAPE '\\'")
        }
        let jobqNames = names.filter { !["jobs", "events", "workers", "schema_migrations"].contains($0) }
        #expect(jobqNames.count > 40)
        #expect(jobqNames.allSatisfy { $0.hasPrefix("jobq_") }, "\(jobqNames)")
        #expect(try JobQueue.schemaStatus(path: store.path).currentVersion == SchemaMigration.latestVersion)
    }

    @Test func theCommandLineRunsInTheAppsDatabase() async throws {
        let store = try Self.appDatabase()
        let before = try Self.appSnapshot(store.path)
        let enqueued = try await CLI.run(["enqueue", "sum", "--payload", #"{"a":1,"b":2}"#], db: store.path)
        #expect(enqueued.status == 0, "\(enqueued.stderr)")
        let worked = try await CLI.run(["work", "--until-empty"], db: store.path)
        #expect(worked.status == 0, "\(worked.stderr)")
        let listed = try await CLI.run(["list", "--json"], db: store.path)
        #expect(listed.stdout.contains("succeeded"), "\(listed.stdout)")
        #expect(try Self.appSnapshot(store.path) == before)
    }

    /// An application's transaction on another file than the queue's, an in-memory queue, and a
    /// store a newer jobq migrated are refused, saying why; nothing is written.
    @Test func aTransactionJobqCannotShareIsRefused() async throws {
        let store = try TemporaryStore()
        let queue = try store.open()
        let other = try TemporaryStore()
        let otherPool = try DatabasePool(path: other.path)
        let request = try JobRequest(executor: "echo", payloadJSON: "{}")
        try await otherPool.write { db in
            #expect {
                try queue.enqueue(request, in: db)
            } throws: { error in
                guard case JobQueueError.invalidInput(let text) = error else { return false }
                return text.contains("not to the store at") && text.contains(other.path)
            }
            #expect(throws: JobQueueError.self) { try JobQueue.inMemory().enqueue(request, in: db) }
        }
        #expect(try await queue.jobs().isEmpty)

        let pool = try DatabasePool(path: store.path)
        try await pool.write { db in try StoreTests.recordVersion(999, in: db) }
        _ = try await pool.write { db in
            #expect {
                try queue.enqueue(request, in: db)
            } throws: { error in
                guard case JobQueueError.incompatibleStore(let text) = error else { return false }
                return text.contains("version 999") && text.contains("upgrade jobq")
            }
        }
        #expect(try await queue.jobs().isEmpty)
    }
}
