import Foundation
import JobQPostgres
import Synchronization
import Testing

@testable import JobQCore
@testable import JobQSQLite

/// The stores the conformance tests run against, as River's driver suite does: the same test
/// body, once per store. PostgreSQL joins when `JOBQ_TEST_POSTGRES_URL` names a server (the
/// PostgreSQL suites print why they are skipped when it does not).
///
/// ```swift
/// @Test(arguments: TestStore.all) func retries(store: TestStore) async throws {
///     let queue = try await store.open()
/// }
/// ```
enum TestStore: String, Sendable, CustomTestStringConvertible {
    case sqlite
    case postgres

    static var all: [TestStore] { PostgresTestServer.available ? [.sqlite, .postgres] : [.sqlite] }

    var testDescription: String { rawValue }

    /// A new, empty store's `--db`: an SQLite file in a temporary folder, or a PostgreSQL URL.
    func location() async throws -> String {
        switch self {
        case .sqlite: try TemporaryStore().path
        case .postgres: try await PostgresTestDatabases.shared.fresh().description
        }
    }

    /// A new, empty store: SQLite in memory, or a PostgreSQL database of its own (copied from a
    /// migrated template; the throwaway cluster goes away with `scripts/postgres.sh stop`).
    func open() async throws -> JobQueue {
        switch self {
        case .sqlite:
            return try JobQueue.inMemory()
        case .postgres:
            return try await JobQueue(
                postgres: try await PostgresTestDatabases.shared.fresh(), logger: PostgresTestServer.logger)
        }
    }
}

/// Creates a database per test from a template migrated once per test process. Creations run
/// one at a time: PostgreSQL refuses to copy a template while another session uses it.
actor PostgresTestDatabases {
    static let shared = PostgresTestDatabases()
    private var template: Task<String, any Error>?
    private var previous: Task<Void, Never>?

    func fresh() async throws -> PostgresSettings {
        let admin = try PostgresSettings(url: try #require(PostgresTestServer.url))
        let template =
            self.template
            ?? Task {
                var settings = admin
                settings.database = "jobq_tpl_" + Self.suffix()
                try await PostgresTestServer.execute(admin, "CREATE DATABASE \(settings.database)")
                try await PostgresSchema.migrate(settings, logger: PostgresTestServer.logger)
                // No connections (autovacuum's included) while it is copied.
                try await PostgresTestServer.execute(
                    admin, "ALTER DATABASE \(settings.database) WITH IS_TEMPLATE true ALLOW_CONNECTIONS false")
                return settings.database
            }
        self.template = template
        var settings = admin
        settings.database = "jobq_c_" + Self.suffix()
        let before = previous
        let creation = Task { [settings] in
            await before?.value
            let name = try await template.value
            // A session that just left the template may take a moment to end.
            for attempt in 1...20 {
                do {
                    return try await PostgresTestServer.execute(
                        admin, "CREATE DATABASE \(settings.database) TEMPLATE \(name)")
                } catch let error as PostgresTestServer.ServerError
                    where error.description.contains("55006") && attempt < 20
                {
                    try await Task.sleep(for: .milliseconds(100))
                }
            }
        }
        previous = Task { _ = await creation.result }
        try await creation.value
        return settings
    }

    private static func suffix() -> String {
        UUID().uuidString.prefix(13).lowercased().replacingOccurrences(of: "-", with: "")
    }
}

extension JobQueue {
    /// Rows of a query on whichever store the queue has, for tests that look at what was
    /// stored beyond the public API.
    func storedRows(_ sql: String, _ arguments: SQLArguments = []) async throws -> [SQLRow] {
        guard let store = store as? any SQLStore else { throw JobQueueError.invalidState("not an SQL store") }
        return try await store.rows(sql, arguments)
    }
}

extension SQLStore {
    fileprivate func rows(_ sql: String, _ arguments: SQLArguments) async throws -> [SQLRow] {
        try await read { db in try db.fetchRows(sql: sql, arguments: arguments) }
    }
}
