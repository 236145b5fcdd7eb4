import Foundation
import JobQPostgres
import Synchronization
import Testing

@testable import JobQCore
@testable import JobQSQL
@testable import JobQSQLite

/// The store conformance suite: every test in this folder takes a `TestStore` and runs its one
/// body on each store, as River's driver suite does; a store passes by passing all of them
/// unchanged. A new store adds its case here (and its `open()`), nothing else. Tests that need
/// one store's own machinery (a file, a restart, SQLite's locks) live in `SQLite/` or
/// `Postgres/`, tests without a store in `Core/`. PostgreSQL joins when
/// `JOBQ_TEST_POSTGRES_URL` names a server (the PostgreSQL suites print why they are skipped
/// when it does not).
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

    /// Another handle on the store at `location` (from ``location()``): its own connections,
    /// as another process's would be.
    func open(at location: String) async throws -> JobQueue {
        switch self {
        case .sqlite: try JobQueue(path: location)
        case .postgres:
            try await JobQueue(postgres: try PostgresSettings(url: location), logger: PostgresTestServer.logger)
        }
    }

    /// A new, empty store: SQLite in memory, or a PostgreSQL database of its own (copied from a
    /// migrated template; the throwaway cluster goes away with `scripts/postgres.sh stop`).
    func open() async throws -> JobQueue {
        switch self {
        case .sqlite:
            return try await offTheTestPool { try JobQueue.inMemory() }
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

/// Keeps the conformance suite honest: every test in `StoreConformance/` is parameterized over
/// the stores, so that a future store runs all of it unchanged.
@Suite("The store conformance suite")
struct StoreConformanceSuiteTests {
    @Test func everyTestInTheSuiteRunsOnEveryStore() throws {
        let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter {
            $0.hasSuffix("Tests.swift")
        }
        #expect(files.count >= 10)
        for file in files {
            let lines = try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8)
                .components(separatedBy: "\n")
            for (index, line) in lines.enumerated() where line.trimmingCharacters(in: .whitespaces).hasPrefix("@Test") {
                // The attribute and the signature (which may take a few lines).
                let declaration = lines[index..<min(index + 4, lines.count)].joined(separator: " ")
                #expect(declaration.contains("TestStore"), "\(file):\(index + 1) does not run on every store")
            }
        }
    }
}
