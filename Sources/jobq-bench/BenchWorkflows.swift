import Foundation
import JobQ
import JobQCommandLine
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
        let pool = Self.quietPool(queue, executors: [SumExecutor()])
        let start = ContinuousClock.now
        try await pool.run()
        let elapsed = (ContinuousClock.now - start).inSeconds
        try await Self.expectSucceeded(queue, id)
        return Double(steps) / elapsed
    }

    /// A pool of 4 that stops when every job is final and logs only errors.
    static func quietPool(_ queue: JobQueue, executors: [any Executor]) -> WorkerPool {
        var options = WorkerPool.Options()
        options.stopWhen = .allJobsFinished
        var logger = Logger(label: "jobq.bench")
        logger.logLevel = .error
        return WorkerPool(queue: queue, concurrency: 4, executors: executors, options: options, logger: logger)
    }

    static func expectSucceeded(_ queue: JobQueue, _ id: WorkflowID) async throws {
        let state = try await queue.workflow(id)?.state
        guard state == .succeeded else {
            throw CLIError.failure("bench: the workflow ended \(state?.rawValue ?? "missing")")
        }
    }
}

/// The no-op of the tree workload: `{"children": n, "grandchildren": m}` returns
/// `{"items": [n × {"children": m}]}`: the root fans out to n middle jobs, each to m leaves.
struct BenchFanOut: Executor {
    static let name = "bench-fan-out"
    struct Input: Codable, Sendable {
        var children: Int?
        var grandchildren: Int?
    }
    struct Item: Codable, Sendable { var children: Int? }
    struct Output: Codable, Sendable { var items: [Item] }
    func run(_ input: Input, context: JobContext) async throws -> Output {
        Output(items: Array(repeating: Item(children: input.grandchildren), count: input.children ?? 0))
    }
}

extension BenchWorkloads {
    /// Runs a tree of 1 root -> `fanOut` -> `fanOut` no-op jobs in this process (concurrency 4):
    /// each level is created by the transactions that record the level above. Returns jobs per
    /// second end to end (submission included) and the time from the last leaf to the tree's
    /// event.
    mutating func runTree(fanOut: Int) async throws -> (jobsPerSecond: Double, lastLeafToTreeEvent: Double) {
        let path = freshPath()
        let queue = try open(path)
        let tree = TreeNode(BenchFanOut.self) {
            TreeNode(BenchFanOut.self, name: "middle", each: "/items") {
                TreeNode(BenchFanOut.self, name: "leaf", each: "/items")
            }
        }
        let pool = Self.quietPool(queue, executors: [BenchFanOut()])
        let start = ContinuousClock.now
        let id = try await queue.submit(
            tree, input: BenchFanOut.Input(children: fanOut, grandchildren: fanOut),
            maxJobs: 1 + fanOut + fanOut * fanOut)
        try await pool.run()
        let elapsed = (ContinuousClock.now - start).inSeconds
        try await Self.expectSucceeded(queue, id)
        guard let status = try await queue.workflow(id), status.jobs.count == 1 + fanOut + fanOut * fanOut,
            let lastLeaf = status.jobs.compactMap(\.finishedAt).max(),
            let treeEvent = try await queue.events(after: 0, filter: EventFilter(workflow: id, kinds: [.tree])).first
        else { throw CLIError.failure("bench: the tree did not create the jobs it should have") }
        return (Double(status.jobs.count) / elapsed, treeEvent.createdAt.timeIntervalSince(lastLeaf) * 1000)
    }
}
