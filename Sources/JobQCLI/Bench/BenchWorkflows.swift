import Foundation
import JobQ
import Logging

/// The workflow workloads of `jobq bench`: what groups and hand-offs cost next to plain jobs.
extension BenchWorkloads {
    /// Submits one workflow holding a parallel group of `members` no-op `sum` steps, then drains
    /// it in this process (concurrency 4). Returns steps per second; the submission is not timed.
    mutating func drainParallelGroup(members: Int) async throws -> Double {
        let path = freshPath()
        let queue = try open(path)
        let steps = try (0..<members).map { WorkflowNode.step(WorkflowStep(try Self.sumRequest($0))) }
        let id = try await queue.submit(Workflow(root: WorkflowGroup(.parallel, steps)))
        try rawStore(path).exec("PRAGMA wal_checkpoint(TRUNCATE)")
        let rate = try await Self.drain(queue, jobs: members, concurrency: 4)
        try await Self.expectSucceeded(queue, id)
        return rate
    }

    /// Submits a sequence of `steps` no-op `sum` steps and runs it in this process: each step is
    /// released by the transaction that records the one before it. Returns steps per second.
    mutating func runSequence(steps: Int) async throws -> Double {
        let path = freshPath()
        let queue = try open(path)
        let members = try (0..<steps).map { WorkflowNode.step(WorkflowStep(try Self.sumRequest($0))) }
        let id = try await queue.submit(Workflow(root: WorkflowGroup(.sequence, members)))
        try rawStore(path).exec("PRAGMA wal_checkpoint(TRUNCATE)")
        var options = WorkerPool.Options()
        options.stopWhen = .allJobsFinished
        var logger = Logger(label: "jobq.bench")
        logger.logLevel = .error
        let pool = WorkerPool(queue: queue, concurrency: 4, executors: [SumExecutor()], options: options, logger: logger)
        let start = ContinuousClock.now
        try await pool.run()
        let elapsed = (ContinuousClock.now - start).inSeconds
        try await Self.expectSucceeded(queue, id)
        return Double(steps) / elapsed
    }

    private static func expectSucceeded(_ queue: JobQueue, _ id: WorkflowID) async throws {
        let state = try await queue.workflow(id)?.state
        guard state == .succeeded else { throw CLIError.failure("bench: the workflow ended \(state?.rawValue ?? "missing")") }
    }
}
