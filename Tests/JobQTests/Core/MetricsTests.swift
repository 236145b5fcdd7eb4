import Foundation
import Metrics
import MetricsTestKit
import Testing

@testable import JobQCore
@testable import JobQSQL
@testable import JobQSQLite

/// The test process's swift-metrics backend, bootstrapped once (swift-metrics allows one per
/// process). Tests tell their metrics apart by queue names of their own.
enum TestMetricsBackend {
    static let shared: TestMetrics = {
        let metrics = TestMetrics()
        MetricsSystem.bootstrap(metrics)
        return metrics
    }()
}

/// Succeeds, fails once, fails for good or overruns its timeout, as its input says.
struct Moody: Executor {
    static let name = "moody"
    struct Input: Codable, Sendable { var mood: String }
    func run(_ input: Input, context: JobContext) async throws -> String {
        switch input.mood {
        case "flaky" where context.attempt == 1: throw TestFailure(message: "not this time")
        case "fail": throw NonRetryableError("never")
        case "slow": try await Task.sleep(for: .seconds(5))
        default: break
        }
        return input.mood
    }
}

struct TestFailure: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}

@Suite("Metrics through swift-metrics")
struct MetricsTests {
    @Test(arguments: TestStore.all) func poolsCountEveryOutcomeByQueueAndExecutor(store: TestStore) async throws {
        let metrics = TestMetricsBackend.shared
        let queue = try await store.open()
        let name = "metrics-\(UUID().uuidString.prefix(8))"
        func request(_ mood: String, timeout: Duration? = nil, attempts: Int = 3) throws -> JobRequest {
            try JobRequest(
                Moody.self, .init(mood: mood), options: .init(queue: name, maxAttempts: attempts, timeout: timeout))
        }
        try await queue.enqueue(contentsOf: [
            try request("fine"), try request("fine"), try request("fine"), try request("flaky"), try request("fail"),
            try request("slow", timeout: .milliseconds(100), attempts: 1)
        ])
        let unique = try JobRequest(
            Moody.self, .init(mood: "fine"), options: .init(queue: name, unique: UniqueKey("one")))
        _ = try await queue.enqueue(contentsOf: [unique, unique])

        var options = quickOptions()
        options.backlogMetricsInterval = .milliseconds(50)
        try await work(queue, executors: [Moody()], queues: [name], options: options)

        let labels = [("queue", name), ("executor", Moody.name)]
        func count(_ label: String, _ extra: [(String, String)] = []) -> Int64 {
            metrics.counterTotal(label: label, dimensions: labels + extra)
        }
        #expect(count("jobq_jobs_enqueued_total") == 7, "six jobs, and one of the two with the same unique key")
        #expect(count("jobq_jobs_started_total") == 8, "seven jobs, the flaky one twice")
        #expect(count("jobq_jobs_completed_total", [("outcome", "succeeded")]) == 5)
        #expect(count("jobq_jobs_completed_total", [("outcome", "retried")]) == 1)
        #expect(count("jobq_jobs_completed_total", [("outcome", "dead")]) == 2)
        #expect(count("jobq_jobs_failed_total", [("reason", "error")]) == 2)
        #expect(count("jobq_jobs_failed_total", [("reason", "timeout")]) == 1)

        let durations = try metrics.expectTimer("jobq_job_duration_seconds", labels).values
        #expect(durations.count == 8)
        #expect(durations.contains { $0 >= 100_000_000 }, "the slow job ran until its 100ms timeout")
        #expect(try metrics.expectTimer("jobq_job_queue_wait_seconds", labels).values.count == 8)
        #expect(
            try metrics.expectMeter("jobq_jobs_running", labels).lastValue == 0, "nothing runs once the pool is done")

        // The backlog gauge is read from the store while the pool runs; it ends with what the
        // store holds (read once more here, since the pool may stop before its next read).
        queue.metrics?.record(try await queue.status())
        #expect(try metrics.expectGauge("jobq_queue_jobs", [("queue", name), ("state", "succeeded")]).lastValue == 5)
        #expect(try metrics.expectGauge("jobq_queue_jobs", [("queue", name), ("state", "dead")]).lastValue == 2)
        #expect(try metrics.expectGauge("jobq_queue_jobs", [("queue", name), ("state", "ready")]).lastValue == 0)
    }

    @Test func aJobCancelledWhileRunningCountsAsDiscarded() async throws {
        let metrics = TestMetricsBackend.shared
        let queue = try TemporaryStore().open()
        let name = "metrics-\(UUID().uuidString.prefix(8))"
        let job = try await queue.enqueue(Moody.self, .init(mood: "slow"), options: .init(queue: name))
        var options = quickOptions(stopWhen: .queuesEmpty)
        options.cancellationCheckInterval = .milliseconds(20)
        let pool = WorkerPool(queue: queue, queues: [name], executors: [Moody()], options: options)
        let run = Task { try await pool.run() }
        try await eventually(.seconds(30), "the job to start") { try await queue.job(job.id)?.state == .running }
        try await queue.cancel(job.id)
        try await within(.seconds(10), "the pool to stop") { try await run.value }
        let labels = [("queue", name), ("executor", Moody.name)]
        #expect(
            metrics.counterTotal(label: "jobq_jobs_completed_total", dimensions: labels + [("outcome", "discarded")])
                == 1)
        #expect(
            metrics.counterTotal(label: "jobq_jobs_completed_total", dimensions: labels + [("outcome", "succeeded")])
                == 0)
        #expect(try metrics.expectMeter("jobq_jobs_running", labels).lastValue == 0)
    }
}
