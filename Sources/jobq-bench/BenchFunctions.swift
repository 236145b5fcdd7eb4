import Foundation
import JobQ
import JobQCommandLine
import Logging

/// A durable function of `steps` steps, each recording its index: what a step costs.
struct BenchSteps: Executor {
    static let name = "bench-steps"
    struct Input: Codable, Sendable { var steps: Int }
    struct Output: Codable, Sendable { var total: Int }
    func run(_ input: Input, context: JobContext) async throws -> Output {
        var total = 0
        for index in 0..<input.steps { total += try await context.step("s\(index)") { index } }
        return Output(total: total)
    }
}

/// A durable function that sleeps a day: what parked functions cost an idle worker.
struct BenchSleeper: Executor {
    static let name = "bench-sleeper"
    struct Input: Codable, Sendable {}
    struct Output: Codable, Sendable {}
    func run(_ input: Input, context: JobContext) async throws -> Output {
        try await context.sleep(for: .seconds(86_400))
        return Output()
    }
}

/// A durable function that waits for its `go` signal: how soon a signal resumes it.
struct BenchWaiter: Executor {
    static let name = "bench-waiter"
    struct Input: Codable, Sendable {}
    struct Output: Codable, Sendable {}
    func run(_ input: Input, context: JobContext) async throws -> Output {
        _ = try await context.waitForSignal("go", as: Int.self)
        return Output()
    }
}

/// The durable-function workloads of `jobq bench`, on either store.
extension BenchWorkloads {
    /// Runs `functions` functions of `steps` steps each in this process (concurrency 4), the
    /// enqueue not timed. Returns steps per second.
    static func runFunctions(_ queue: JobQueue, functions: Int, steps: Int) async throws -> Double {
        let request = try JobRequest(BenchSteps.self, .init(steps: steps))
        _ = try await queue.enqueue(contentsOf: Array(repeating: request, count: functions))
        let pool = quietPool(queue, executors: [BenchSteps()])
        let start = ContinuousClock.now
        try await pool.run()
        let elapsed = (ContinuousClock.now - start).inSeconds
        guard pool.statistics.succeeded == functions else {
            throw CLIError.failure("bench: \(pool.statistics.succeeded) of \(functions) functions succeeded")
        }
        return Double(functions * steps) / elapsed
    }

    /// Drains `jobs` plain `sum` jobs in this process (concurrency 4), the enqueue not timed:
    /// the baseline of ``runFunctions(_:functions:steps:)``. Returns jobs per second.
    static func drainPlain(_ queue: JobQueue, jobs: Int) async throws -> Double {
        _ = try await queue.enqueue(contentsOf: try (0..<jobs).map(sumRequest))
        return try await drain(queue, jobs: jobs, concurrency: 4)
    }

    /// Parks `count` functions in a day-long sleep, run by a pool in this process.
    static func parkSleepers(_ queue: JobQueue, count: Int) async throws {
        let request = try JobRequest(BenchSleeper.self, .init())
        for start in stride(from: 0, to: count, by: 1000) {
            _ = try await queue.enqueue(contentsOf: Array(repeating: request, count: min(1000, count - start)))
        }
        var options = WorkerPool.Options()
        options.stopWhen = .queuesEmpty
        var logger = Logger(label: "jobq.bench")
        logger.logLevel = .error
        try await WorkerPool(
            queue: queue, concurrency: 4, executors: [BenchSleeper()], options: options, logger: logger
        ).run()
        let parked = try await queue.status().queues.first { $0.name == "default" }?.counts["scheduled"] ?? 0
        guard parked == count else { throw CLIError.failure("bench: \(parked) of \(count) functions parked") }
    }

    /// Milliseconds from a signal to its function's success being visible, for `count`
    /// functions one after the other, each parked in its wait, a pool idle in this process.
    static func signalLatency(_ queue: JobQueue, count: Int) async throws -> SignalLatency {
        var logger = Logger(label: "jobq.bench")
        logger.logLevel = .error
        let pool = WorkerPool(queue: queue, concurrency: 4, executors: [BenchWaiter()], logger: logger)
        let running = Task { try await pool.run() }
        defer { running.cancel() }
        var samples = SignalLatency()
        let feed = queue.events(
            EventFilter(kinds: [.parked, .succeeded]), since: try await queue.latestEventID(),
            pollInterval: .milliseconds(1))
        var iterator = feed.makeAsyncIterator()
        for _ in 0..<count {
            let job = try await queue.enqueue(BenchWaiter.self, .init())
            while let event = try await iterator.next(), event.jobID != job.id || event.kind != .parked {}
            // Idle a moment, so that each signal measures a wake-up from idle.
            try await Task.sleep(for: .milliseconds(5))
            let start = ContinuousClock.now
            // From the call: the commit is inside it, and a worker woken by it may take the
            // signal before this task runs again (a loaded CI run measured 0 from the return).
            let sent = Date()
            try await queue.signal(job: job.id, name: "go", payloadJSON: "1")
            while let event = try await iterator.next(), event.jobID != job.id || event.kind != .succeeded {}
            samples.toSuccess.append((ContinuousClock.now - start).inSeconds * 1000)
            // The wait's record ends when the function took the signal (this process's clock).
            if let taken = try await queue.functionSteps(of: job.id).first?.finishedAt {
                samples.toTake.append(max(0, taken.timeIntervalSince(sent)) * 1000)
            }
        }
        return samples
    }

    /// Milliseconds per signal: from the call to the function's success (seen in the feed), and
    /// from the signal's call to the function taking it (its wait's record ending): the
    /// second is to a signal what pick-up is to a new job.
    struct SignalLatency {
        var toSuccess: [Double] = []
        var toTake: [Double] = []
    }
}
