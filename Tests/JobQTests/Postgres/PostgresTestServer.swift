import Foundation
import Logging
import PostgresNIO
import Testing

@testable import JobQPostgres

/// The PostgreSQL server the tests use: `JOBQ_TEST_POSTGRES_URL`, which .ci/run sets after it
/// starts one (`scripts/postgres.sh start` prints such a URL). Without it, every test that needs
/// a server is skipped, and Swift Testing prints why.
enum PostgresTestServer {
    static let url = ProcessInfo.processInfo.environment["JOBQ_TEST_POSTGRES_URL"]

    static let skipReason: Comment =
        "no PostgreSQL server: set JOBQ_TEST_POSTGRES_URL (`export JOBQ_TEST_POSTGRES_URL=$(scripts/postgres.sh start)`)"

    static var available: Bool { url != nil }

    static let logger: Logger = {
        var logger = Logger(label: "jobq.postgres.tests")
        logger.logLevel = .error
        return logger
    }()

    /// Runs `body` against a database of its own, created for it and dropped after.
    static func withFreshDatabase<T>(_ body: (PostgresSettings) async throws -> T) async throws -> T {
        let admin = try PostgresSettings(url: try #require(url))
        let name = "jobq_t_" + UUID().uuidString.prefix(12).lowercased().replacingOccurrences(of: "-", with: "")
        try await execute(admin, "CREATE DATABASE \(name)")
        var settings = admin
        settings.database = name
        do {
            let result = try await body(settings)
            await drop(name, admin)
            return result
        } catch {
            await drop(name, admin)
            throw error
        }
    }

    /// Drops a test's database. Clearing up is not what a test checks: a drop the server is slow
    /// to finish (DROP DATABASE waits for the checkpointer, which on a busy CI machine has taken
    /// over a minute) is given up to five minutes, and a failure is printed, leaving the database
    /// to the throwaway cluster, instead of failing a test whose checks all passed.
    private static func drop(_ name: String, _ admin: PostgresSettings) async {
        do {
            try await execute(admin, "SET statement_timeout = '5min'", "DROP DATABASE \(name) WITH (FORCE)")
        } catch {
            print("note: the test database \(name) was left behind: \(error)")
        }
    }

    /// Runs each statement in turn on one connection of its own.
    static func execute(_ settings: PostgresSettings, _ statements: String...) async throws {
        let connection = try await PostgresConnector(settings: settings, logger: logger).connect()
        var current = ""
        do {
            for sql in statements {
                current = sql
                try await connection.query(PostgresQuery(unsafeSQL: sql), logger: logger)
            }
            try await connection.close()
        } catch {
            try? await connection.close()
            throw ServerError(description: "\(current): \(PostgresConnector.explain(error))")
        }
    }

    struct ServerError: Error, CustomStringConvertible {
        let description: String
    }

    static func rows<each Column: PostgresDecodable & Sendable>(
        _ settings: PostgresSettings, _ sql: String, as types: (repeat each Column).Type
    ) async throws -> [(repeat each Column)] {
        let connection = try await PostgresConnector(settings: settings, logger: logger).connect()
        defer { Task { try? await connection.close() } }
        var result: [(repeat each Column)] = []
        for try await row in try await connection.query(PostgresQuery(unsafeSQL: sql), logger: logger).decode(types) {
            result.append(row)
        }
        return result
    }
}
