import Foundation
import Testing

@testable import JobQCore
@testable import JobQSQL
@testable import JobQSQLite

/// DependencyTests on the SQLite store only (a file, a restart, a second connection, SQLite's own locks);
/// the tests every store passes are in StoreConformance/.
extension DependencyTests {
    @Test func runPolicyTellsTheExecutorWhichDependencyFailed() async throws {
        struct Report: Executor {
            static let name = "report"
            func run(_ input: JSONValue, context: JobContext) async throws -> [FailedDependency] {
                context.failedDependencies
            }
        }
        let queue = try JobQueue.inMemory()
        let doomed = try await queue.enqueue(FailExecutor.self, .init(message: "nope"), options: .init(maxAttempts: 1))
        let report = try await queue.enqueue(
            try JobRequest(
                executor: "report", payloadJSON: "{}", options: .init(after: [doomed.id], onDependencyFailure: .run)))
        try await work(queue, executors: BuiltinExecutors.all + [Report()])
        let seen = try #require(try await queue.job(report.id)?.result(as: [FailedDependency].self))
        #expect(seen == [FailedDependency(job: doomed.id, group: nil, state: "dead", error: "nope")])
    }
}
