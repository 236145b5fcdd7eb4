import Foundation
import JobQPostgres
import Testing

@testable import JobQCore
@testable import JobQSQL

/// `jobq copy` carries durable functions: one copied while it waits for a signal resumes on the
/// other store with its record, its kept signals and its wait, either way.
@Suite(.enabled(if: PostgresTestServer.available, PostgresTestServer.skipReason))
struct FunctionCopyTests {
    @Test(arguments: [true, false]) func aFunctionCopiedMidWaitResumesOnTheOtherStore(fromSQLite: Bool) async throws {
        let sqlite = try TemporaryStore()
        let sqliteQueue = try JobQueue(path: sqlite.path)
        let postgresQueue = try await JobQueue(
            postgres: try await PostgresTestDatabases.shared.fresh(), logger: PostgresTestServer.logger)
        let (source, destination) = fromSQLite ? (sqliteQueue, postgresQueue) : (postgresQueue, sqliteQueue)

        let job = try await source.enqueue(Waiter.self, .init(timeoutSeconds: 600, waits: 2))
        _ = try await source.signal(job: job.id, name: "go", payload: Waiter.Go(n: 1))
        try await work(source, executors: [Waiter()], concurrency: 1, options: quickOptions(stopWhen: .queuesEmpty))
        #expect(try await source.job(job.id)?.state == .scheduled, "parked at its second wait")
        let recorded = try await source.functionSteps(of: job.id)

        let report = try await source.copy(to: destination) { _ in }
        #expect(report.verified, "\(report.tables.filter { !$0.matches })")
        let copied = try await destination.functionSteps(of: job.id)
        #expect(copied.map(\.name) == recorded.map(\.name))
        #expect(copied.map(\.resultJSON) == recorded.map(\.resultJSON))
        #expect(copied.map(\.finishedAt) == recorded.map(\.finishedAt))

        let woke = try await destination.signal(job: job.id, name: "go", payload: Waiter.Go(n: 2))
        #expect(woke.wokeJob, "the copied wait is still a wait for 'go'")
        try await work(destination, executors: [Waiter()], concurrency: 1)
        let done = try #require(try await destination.job(job.id))
        #expect(done.state == .succeeded, "\(done.error ?? "")")
        #expect(try done.result(as: Waiter.Output.self) == .init(got: [.init(n: 1), .init(n: 2)]))
        // New signals on the destination come after the copied ones.
        #expect(woke.id > 1)
    }
}
