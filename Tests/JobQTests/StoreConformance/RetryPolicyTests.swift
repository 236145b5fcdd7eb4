import Foundation
import Testing

@testable import JobQCore
@testable import JobQSQL

/// An executor's own retry policy, on every store: its attempts for jobs enqueued by its type
/// (a job's own value wins), its backoff instead of the pool's, and errors it never retries.
@Suite("Retry policy per executor")
struct RetryPolicyTests {
    struct Declined: Error, CustomStringConvertible {
        var description: String { "card declined" }
    }
    struct Flaky: Error {}

    struct Charge: Executor {
        static let name = "test-charge"
        static let retryPolicy: RetryPolicy? = RetryPolicy(
            maxAttempts: 6, backoff: RetryBackoff(base: .milliseconds(10), maximum: .milliseconds(20), jitter: 0),
            giveUpOn: { $0 is Declined })
        struct Input: Codable, Sendable { var declined: Bool }
        struct Output: Codable, Sendable {}
        func run(_ input: Input, context: JobContext) async throws -> Output {
            if input.declined { throw Declined() }
            throw Flaky()
        }
    }

    @Test(arguments: TestStore.all)
    func theExecutorsPolicyDecidesAttemptsBackoffAndGivingUp(store: TestStore) async throws {
        let queue = try await store.open()
        let flaky = try await queue.enqueue(Charge.self, .init(declined: false))
        #expect(flaky.maxAttempts == 6, "the executor's attempts for a job that sets none")
        let own = try await queue.enqueue(Charge.self, .init(declined: false), options: .init(maxAttempts: 2))
        #expect(own.maxAttempts == 2, "the job's own value wins")
        let declined = try await queue.enqueue(Charge.self, .init(declined: true))
        var options = quickOptions()
        // The pool's backoff would wait an hour: the executor's 10-20 ms is what runs.
        options.retryBackoff = RetryBackoff(base: .seconds(3600), maximum: .seconds(3600), jitter: 0)
        // A lease no loaded machine outlasts: this is about attempts, and a lease that ran out
        // while the suite starved this pool (two CI runs took 46 s here) let a reclaim count one
        // more attempt of the declined job.
        options.lease = .seconds(300)
        let started = ContinuousClock.now
        try await WorkerPool(queue: queue, executors: [Charge()], options: options).run()
        #expect(ContinuousClock.now - started < .seconds(60))
        #expect(try await queue.job(flaky.id)?.state == .dead)
        #expect(try await queue.job(flaky.id)?.attempt == 6)
        #expect(try await queue.job(own.id)?.attempt == 2)
        let gaveUp = try #require(try await queue.job(declined.id))
        #expect(gaveUp.state == .dead && gaveUp.attempt == 1 && gaveUp.error == "card declined")
    }
}
