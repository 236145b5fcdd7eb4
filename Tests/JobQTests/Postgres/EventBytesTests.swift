import Foundation
import JobQ
import Testing

@testable import JobQCore
@testable import JobQPostgres
@testable import JobQSQL

/// One event vocabulary: the same story told by both stores writes events of the same kinds
/// with the same data, byte for byte once times and worker names are masked, whether an event
/// was written by the store SQL (SQLite, PostgreSQL's rules) or by PostgreSQL's own statements
/// (the one-statement claim's `started`, the success function's `succeeded`).
@Suite(
    "Event data is the same on every store", .enabled(if: PostgresTestServer.available, PostgresTestServer.skipReason))
struct EventBytesTests {
    @Test func everyKindOfEventHasTheSameDataOnBothStores() async throws {
        let sqlite = try await Self.story(on: try await TestStore.sqlite.open())
        let postgres = try await Self.story(on: try await TestStore.postgres.open())
        let kinds = Set(sqlite.map(\.kind))
        // The story covers the vocabulary; a new kind joins it here.
        let untold: Set<EventKind> = [.released]
        #expect(
            kinds == Set(EventKind.allCases).subtracting(untold),
            "missing: \(Set(EventKind.allCases).subtracting(kinds).subtracting(untold))")
        for kind in EventKind.allCases {
            let left = sqlite.filter { $0.kind == kind }.map(\.text).sorted()
            let right = postgres.filter { $0.kind == kind }.map(\.text).sorted()
            #expect(left == right, "\(kind): SQLite \(left) / PostgreSQL \(right)")
        }
    }

    struct Told: Sendable {
        let kind: EventKind
        /// The job, queue, executor, batch, workflow and data, times and workers masked.
        let text: String
    }

    /// A story that makes every kind of event, deterministically (one slot, one queue at a time).
    static func story(on queue: JobQueue) async throws -> [Told] {
        let options = quickOptions()
        func drain(_ queues: [String] = ["default"], executors: [any Executor] = BuiltinExecutors.all) async throws {
            try await work(
                queue, executors: executors + [ReportsOnce(), Patient(), Sleepy()], queues: queues,
                concurrency: 1, options: options)
        }
        // Jobs: succeeded, failed then dead, timed out, progress, snoozed.
        _ = try await queue.enqueue(try JobRequest(executor: "sum", payloadJSON: #"{"a":1,"b":2}"#))
        _ = try await queue.enqueue(
            try JobRequest(executor: "fail", payloadJSON: #"{"message":"boom"}"#, options: .init(maxAttempts: 2)))
        _ = try await queue.enqueue(Sleepy.self, 1, options: .init(maxAttempts: 1))
        // One report per job: reports close together are merged (throttled), and how many
        // merge depends on the machine's speed, not on the store.
        _ = try await queue.enqueue(ReportsOnce.self, .progress)
        _ = try await queue.enqueue(ReportsOnce.self, .update)
        _ = try await queue.enqueue(Patient.self, .init(times: 1))
        try await drain()
        // A durable function: a signal kept for it, its steps, and a sleep that parks it.
        let napper = try await queue.enqueue(Napper.self, .init(seconds: 0.05, tag: "story"))
        _ = try await queue.signal(job: napper.id, name: "unused", payloadJSON: #"{"x":1}"#)
        try await drain(executors: BuiltinExecutors.all + [Napper()])
        // A function cancelled while it sleeps: woken, it compensates and ends cancelled.
        let saga = try await queue.enqueue(Saga.self, .init(tag: "story"), options: .init(queue: "sagas"))
        try await work(
            queue, executors: [Saga()], queues: ["sagas"], concurrency: 1,
            options: quickOptions(stopWhen: .queuesEmpty))
        _ = try await queue.cancel(saga.id)
        try await drain(["sagas"], executors: [Saga()])
        // Cancelled, retried, updated by a unique key, expired.
        let idle = try await queue.enqueue(
            try JobRequest(executor: "echo", payloadJSON: "{}", options: .init(queue: "idle")))
        _ = try await queue.cancel(idle.id)
        _ = try await queue.retry(idle.id)
        let key = UniqueKey("k", onConflict: .replace)
        _ = try await queue.enqueue(
            try JobRequest(executor: "echo", payloadJSON: #"{"v":1}"#, options: .init(queue: "idle", unique: key)))
        _ = try await queue.enqueue(
            try JobRequest(executor: "echo", payloadJSON: #"{"v":2}"#, options: .init(queue: "idle", unique: key)))
        let late = try await queue.enqueue(
            try JobRequest(
                executor: "echo", payloadJSON: "{}",
                options: .init(queue: "idle", expiresAt: Date().addingTimeInterval(3600))))
        try await ExpiryTests.overdue(queue, [late.id])
        _ = try await queue.store.expireOverdueJobs(skipping: [])
        // A batch, a tracking set, a lane, a workflow, a tree.
        _ = try await queue.createBatch("b", onComplete: try JobRequest(executor: "echo", payloadJSON: "{}"))
        _ = try await queue.enqueue(
            try JobRequest(executor: "sum", payloadJSON: #"{"a":1,"b":1}"#, options: .init(batch: "b")))
        _ = try await queue.closeBatch("b")
        _ = try await queue.addTrackingSet("t", members: [.job(named: "tracked")])
        _ = try await queue.enqueue(
            try JobRequest(executor: "sum", payloadJSON: #"{"a":2,"b":2}"#, options: .init(name: "tracked")))
        _ = try await queue.enqueue(
            try JobRequest(executor: "sum", payloadJSON: #"{"a":3,"b":3}"#, options: .init(lane: "L")))
        _ = try await queue.submit(
            try Workflow(name: "w") {
                try WorkflowStep(executor: "sum", payloadJSON: #"{"a":1,"b":1}"#)
                try WorkflowGroup.parallel(name: "p") { try WorkflowStep(executor: "echo", payloadJSON: #"{"x":1}"#) }
            })
        _ = try await queue.submit(
            TreeNode(executor: "echo") { TreeNode(executor: "echo", name: "leaf", each: "/ids") },
            input: ["ids": JSONValue.array([1, 2])] as [String: JSONValue])
        try await drain()
        // A schedule and a trigger, added and emitted.
        _ = try await queue.addSchedule(
            Schedule(
                name: "s", request: try JobRequest(executor: "echo", payloadJSON: "{}", options: .init(queue: "idle")),
                timing: .every(.seconds(3600))))
        _ = try await queue.addTrigger(
            Trigger(
                event: "e", task: "go",
                request: try JobRequest(executor: "echo", payloadJSON: "{}", options: .init(queue: "idle"))))
        _ = try await queue.emit("e", dedupe: "d")
        // An operator's bulk action: a retry of a succeeded job is skipped, and says so.
        _ = try await queue.perform(.retry, where: JobFilter("state:succeeded executor:echo"))
        _ = try await queue.perform(.cancel, where: JobFilter(#"queue:idle /nothing = "here""#))

        let time = try Regex(#""\d{4}-\d\d-\d\dT[0-9:.]+Z""#)
        let worker = try Regex(#""worker":"[^"]*""#)
        let events = try await queue.events(after: 0, limit: 10_000)
        // Jobs are named by their order of creation: the stores number them differently (on
        // SQLite jobs and events share one id counter), in the data too.
        let order = Dictionary(
            uniqueKeysWithValues: Set(events.compactMap(\.jobID)).sorted().enumerated().map { ($1, $0 + 1) })
        func job(_ id: Int64) -> String { order[id].map { "#\($0)" } ?? "\(id)" }
        let jobInData = try Regex(#"("(?:job|completeJob|parentJob)":|"jobs":\[|")(\d+)(?=[,}\]"])"#)
        return events.map { event in
            let data = (event.dataJSON ?? "null").replacing(time, with: "\"<time>\"").replacing(
                worker, with: "\"worker\":\"<worker>\""
            ).replacing(jobInData) { match in
                let prefix = match.output[1].substring.map(String.init) ?? ""
                let number = match.output[2].substring.flatMap { Int64($0) }
                // A quoted number is a job only as an object's key (a batch's results).
                return prefix + (number.map(job) ?? "")
            }
            let place = [
                event.jobID.map { "job \(job($0))" }, event.queue, event.executor, event.batch,
                event.workflowID.map { "workflow \($0)" }
            ].compactMap { $0 }.joined(separator: " ")
            return Told(kind: event.kind, text: "\(place): \(data)")
        }
    }
}

/// Reports progress or an update once, so that its `progress` event is the same on any machine.
struct ReportsOnce: Executor {
    static let name = "reports-once"
    enum Input: String, Codable, Sendable { case progress, update }
    func run(_ input: Input, context: JobContext) async throws -> Int {
        switch input {
        case .progress: try await context.progress(0.5, message: "half")
        case .update: try await context.update(["done": 2])
        }
        return 1
    }
}
