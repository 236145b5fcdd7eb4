import Foundation
import Synchronization
import Testing

@testable import JobQCore
@testable import JobQSQL
@testable import JobQSQLite

/// Pauses by executor and of the whole store, on every store and through every claim path
/// (an unlimited queue, a limited one, a partitioned one).
@Suite("Pausing an executor, or everything")
struct PauseTests {
    /// Two executors in three queues: `plain` (no limits), `limited` (3 at once), `split` (per
    /// payload member). Pausing `echo` leaves its jobs ready in all three; `sum` runs everywhere.
    @Test(arguments: TestStore.all) func aPausedExecutorIsPassedOverInEveryQueue(store: TestStore) async throws {
        let queue = try await store.open()
        try await queue.setLimits(QueueLimits(concurrency: 3), for: "limited")
        try await queue.setLimits(QueueLimits(concurrency: 2, partitionBy: .payload("/c")), for: "split")
        let queues = ["plain", "limited", "split"]
        var requests: [JobRequest] = []
        for name in queues {
            for index in 0..<4 {
                requests.append(
                    try JobRequest(executor: "echo", payloadJSON: #"{"c":"\#(index)"}"#, options: .init(queue: name)))
                requests.append(
                    try JobRequest(
                        executor: "sum", payloadJSON: #"{"a":1,"b":\#(index),"c":"\#(index)"}"#,
                        options: .init(queue: name)))
            }
        }
        _ = try await queue.enqueue(contentsOf: requests)
        let before = Date()
        try await queue.pause(executor: "echo")
        try await queue.pause(executor: "echo")  // again: keeps its first time

        try await work(queue, queues: queues)
        #expect(try await queue.count(where: JobFilter("executor:sum state:succeeded")) == 12)
        #expect(try await queue.count(where: JobFilter("executor:echo state:ready")) == 12)
        let status = try await queue.status()
        #expect(status.pausedExecutors.map(\.name) == ["echo"])
        let since = try #require(status.pausedExecutors.first?.since)
        #expect(since >= before.addingTimeInterval(-1) && since <= Date())
        #expect(status.allPausedSince == nil)
        #expect(try await queue.backlog(queues: queues) == 12, "counted, though no claim takes them")

        try await queue.resume(executor: "echo")
        try await work(queue, queues: queues)
        #expect(try await queue.count(where: JobFilter("state:succeeded")) == 24)
        #expect(try await queue.status().pausedExecutors.isEmpty)
    }

    /// A job a worker claimed ahead before its executor was paused is handed back (released, its
    /// attempt not counted, no `started` event) within a maintenance pass, not run after the pause.
    @Test(arguments: TestStore.all) func jobsClaimedAheadBeforeAPauseAreHandedBack(store: TestStore) async throws {
        let queue = try await store.open()
        var ids: [JobID] = []
        for index in 0..<3 {
            ids.append(
                try await queue.enqueue(
                    try JobRequest(
                        executor: Gated.name, payloadJSON: "{\"n\":\(index)}", options: .init(queue: "gated"))
                ).id)
        }
        let gate = Gate()
        let pool = WorkerPool(
            queue: queue, queues: ["gated"], concurrency: 1, executors: [Gated(gate: gate)],
            options: quickOptions(stopWhen: .never))
        let running = Task { try await pool.run() }
        defer { running.cancel() }
        // One job runs (held at the gate) and one waits in the worker's buffer: both `running`.
        try await eventually(.seconds(15), "one job running and one claimed ahead") {
            try await queue.count(where: JobFilter("state:running")) == 2
        }
        try await queue.pause(executor: Gated.name)
        try await eventually(.seconds(15), "the claimed-ahead job handed back") {
            try await queue.count(where: JobFilter("state:ready")) == 2
        }
        gate.open()
        try await eventually(.seconds(15), "the running job to finish") {
            try await queue.count(where: JobFilter("state:succeeded")) == 1
        }
        try await Task.sleep(for: .milliseconds(300))
        #expect(try await queue.count(where: JobFilter("state:ready")) == 2, "nothing more starts while paused")
        let handedBack = try await queue.jobs(where: JobFilter("state:ready"))
        #expect(handedBack.allSatisfy { $0.attempt == 0 })
        let events = try await queue.events(after: 0, limit: 1000)
        for job in handedBack {
            #expect(!events.contains { $0.jobID == job.id && $0.kind == .started })
        }
        #expect(events.contains { $0.kind == .released && handedBack.map(\.id).contains($0.jobID ?? 0) })

        try await queue.resume(executor: Gated.name)
        try await eventually(.seconds(15), "every job to run once resumed") {
            try await queue.count(where: JobFilter("state:succeeded")) == 3
        }
    }

    @Test(arguments: TestStore.all) func pausingEverythingStopsEveryClaimAndKeepsTheOtherPauses(store: TestStore)
        async throws
    {
        let queue = try await store.open()
        _ = try await queue.enqueue(
            contentsOf: try ["a", "b"].flatMap { name in
                try (0..<3).map { _ in try JobRequest(executor: "echo", payloadJSON: "{}", options: .init(queue: name))
                }
            })
        try await queue.pause(queue: "b")
        try await queue.pauseAll()
        let paused = try await queue.status()
        #expect(paused.allPausedSince != nil)
        #expect(paused.queues.first { $0.name == "b" }?.pausedSince != nil)
        #expect(paused.queues.first { $0.name == "a" }?.pausedSince == nil)

        try await work(queue, queues: ["a", "b"])
        #expect(try await queue.count(where: JobFilter("state:ready")) == 6)
        // A claim asked directly takes nothing either.
        let claimed = try await queue.store.claim(
            queues: ["a", "b"], limit: 10, workerID: "w", lease: .seconds(30), startingNow: 0)
        #expect(claimed.isEmpty)

        try await queue.resumeAll()
        #expect(try await queue.status().allPausedSince == nil)
        try await work(queue, queues: ["a", "b"])
        #expect(try await queue.count(where: JobFilter("queue:a state:succeeded")) == 3)
        #expect(try await queue.count(where: JobFilter("queue:b state:ready")) == 3, "queue b stays paused")
        try await queue.resume(queue: "b")
        #expect(try await queue.status().queues.first { $0.name == "b" }?.pausedSince == nil)
    }
}

/// Holds its jobs until ``Gate/open()``.
struct Gated: Executor {
    static let name = "gated"
    let gate: Gate
    func run(_ input: JSONValue, context: JobContext) async throws -> JSONValue {
        while !gate.isOpen { try await Task.sleep(for: .milliseconds(10)) }
        return input
    }
}

final class Gate: Sendable {
    private let state = Mutex(false)
    var isOpen: Bool { state.withLock { $0 } }
    func open() { state.withLock { $0 = true } }
}
