import Foundation
@testable import JobQ
import JobQPostgres
import Synchronization
import Testing

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

    /// A new, empty store: SQLite in memory, or a PostgreSQL database of its own (copied from a
    /// migrated template; the throwaway cluster goes away with `scripts/postgres.sh stop`).
    func open() async throws -> JobQueue {
        switch self {
        case .sqlite:
            return try JobQueue.inMemory()
        case .postgres:
            return try await JobQueue(postgres: try await PostgresTestDatabases.shared.fresh(), logger: PostgresTestServer.logger)
        }
    }
}

/// Creates a database per test from a template migrated once per test process.
actor PostgresTestDatabases {
    static let shared = PostgresTestDatabases()
    private var template: String?

    func fresh() async throws -> PostgresSettings {
        let admin = try PostgresSettings(url: try #require(PostgresTestServer.url))
        if template == nil {
            let name = "jobq_tpl_" + Self.suffix()
            try await PostgresTestServer.execute(admin, "CREATE DATABASE \(name)")
            var settings = admin
            settings.database = name
            try await PostgresSchema.migrate(settings, logger: PostgresTestServer.logger)
            template = name
        }
        var settings = admin
        settings.database = "jobq_c_" + Self.suffix()
        try await PostgresTestServer.execute(admin, "CREATE DATABASE \(settings.database) TEMPLATE \(template!)")
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
