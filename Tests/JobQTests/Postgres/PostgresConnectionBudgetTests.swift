import Foundation
import JobQ
import Logging
import PostgresNIO
import Testing

@testable import JobQCore
@testable import JobQPostgres

/// A process keeps to its connection budget (``PostgresSettings/connections``) whatever it
/// does: enqueue, claim, complete, unlock dependents, read the status and the event feed.
@Suite("PostgreSQL: connections per process")
struct PostgresConnectionBudgetTests {
    @Test(arguments: [1, 2, 3, 4, 5, 7]) func aProcessOpensNoMoreConnectionsThanItsBudget(budget: Int) async throws {
        guard PostgresTestServer.available else {
            Issue.record("no PostgreSQL server: set JOBQ_TEST_POSTGRES_URL (scripts/postgres.sh start)")
            return
        }
        var settings = try await PostgresTestDatabases.shared.fresh()
        settings.connections = budget
        settings.applicationName = "jobq-budget-\(budget)-\(UInt32.random(in: 0...UInt32.max))"
        let queue = try await JobQueue(postgres: settings, logger: PostgresTestServer.logger)
        let first = try await queue.enqueue(SumExecutor.self, .init(a: 1, b: 1))
        _ = try await queue.enqueue(
            contentsOf: try (0..<40).map { try JobRequest(SumExecutor.self, .init(a: $0, b: 1)) })
        let dependent = try await queue.enqueue(SumExecutor.self, .init(a: 2, b: 2), options: .init(after: [first.id]))
        var options = quickOptions()
        options.changeCheckInterval = .milliseconds(100)
        _ = try await work(queue, options: options)
        #expect(try await queue.job(dependent.id)?.state == .succeeded)
        #expect(try await queue.count(where: try JobFilter("state:succeeded")) == 42)
        _ = try await queue.status()
        _ = try await queue.events(after: 0, limit: 100)
        let open = try await Self.connections(named: settings.applicationName)
        let layout = ConnectionLayout(budget: budget)
        #expect(open >= 1 && open <= budget, "\(open) connections open with a budget of \(budget)")
        #expect(open <= layout.total)
        if !layout.listens { #expect(open == 1, "one connection does everything") }
    }

    /// How many connections named `name` the server has now (the LISTEN connection's name is
    /// `name` with `-listen`).
    static func connections(named name: String) async throws -> Int {
        let admin = try PostgresSettings(url: try #require(PostgresTestServer.url))
        let connection = try await PostgresConnector(settings: admin, logger: PostgresTestServer.logger).connect()
        defer { Task { try? await connection.close() } }
        let rows = try await connection.query(
            "SELECT count(*)::int FROM pg_stat_activity WHERE application_name IN (\(name), \(name + "-listen"))",
            logger: PostgresTestServer.logger)
        for try await count in rows.decode(Int.self) { return count }
        return 0
    }
}
