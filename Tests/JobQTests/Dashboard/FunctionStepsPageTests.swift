import Foundation
import Testing

@testable import JobQCore

/// A durable function's job page lists its steps, and a hostile step name or result is shown as
/// text, never as markup.
@Suite("A function's steps on its job page")
struct FunctionStepsPageTests {
    struct Hostile: Executor {
        static let name = "test-hostile-function"
        struct Input: Codable, Sendable {}
        struct Output: Codable, Sendable {}
        func run(_ input: Input, context: JobContext) async throws -> Output {
            _ = try await context.step("<script>alert('name')</script>") { "</code><script>alert('result')</script>" }
            try await context.sleep(for: .seconds(3600))
            return Output()
        }
    }

    @Test func stepsAreListedAndHostileTextIsEscaped() async throws {
        let queue = try JobQueue.inMemory()
        let job = try await queue.enqueue(Hostile.self, .init())
        try await work(queue, executors: [Hostile()], concurrency: 1, options: quickOptions(stopWhen: .queuesEmpty))
        let dashboard = try await RunningDashboard(queue: queue, options: .init(storeName: "m", access: .loopbackOnly))
        let page = try await dashboard.get("/jobs/\(job.id)")
        #expect(page.status == 200)
        #expect(page.body.contains("<h2>Steps</h2>"))
        #expect(page.body.contains("sleeping"), "the sleep it is in")
        #expect(!page.body.contains("<script>alert"), "a step's name or result became markup")
        #expect(
            page.body.contains("&lt;script&gt;alert(&#39;name&#39;)&lt;/script&gt;")
                || page.body.contains("&lt;script&gt;alert("))
    }
}
