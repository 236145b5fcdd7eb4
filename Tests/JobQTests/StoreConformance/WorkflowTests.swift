import Foundation
import Synchronization
import Testing

@testable import JobQCore
@testable import JobQSQL
@testable import JobQSQLite

/// Writes `{"key": value}` into the shared context; returns what it saw when it started.
struct SharedWriter: Executor {
    static let name = "shared-writer"
    struct Input: Codable, Sendable {
        var key: String
        var value: Int
    }
    func run(_ input: Input, context: JobContext) async throws -> [String: JSONValue] {
        try context.setShared(input.key, input.value)
        return context.shared
    }
}

/// Returns the shared context as it saw it.
struct SharedReader: Executor {
    static let name = "shared-reader"
    func run(_ input: JSONValue, context: JobContext) async throws -> [String: JSONValue] { context.shared }
}

@Suite("Workflows")
struct WorkflowTests {
    static let executors: [any Executor] = BuiltinExecutors.all + [SharedWriter(), SharedReader()]

    /// `limit` detects a hang: a whole suite on a loaded CI machine once took over 30 s for a
    /// workflow of a dozen short steps.
    func run(_ queue: JobQueue, limit: Duration = .seconds(90)) async throws {
        try await work(queue, executors: Self.executors, concurrency: 4, limit: limit)
    }

    func job(_ queue: JobQueue, _ status: WorkflowStatus, named name: String) async throws -> Job {
        try #require(status.jobs.first { $0.name == name }, "a step named \(name)")
    }

    @Test(arguments: TestStore.all) func aDeadMemberFailsTheWorkflowAndCancelsTheRest(store: TestStore) async throws {
        let queue = try await store.open()
        let id = try await queue.submit(
            try Workflow(name: "doomed") {
                try WorkflowStep(executor: "sum", payloadJSON: #"{"a":1,"b":1}"#, options: .init(name: "first"))
                try WorkflowGroup.parallel(name: "fan") {
                    try WorkflowStep(
                        executor: "fail", payloadJSON: #"{"message":"boom"}"#,
                        options: .init(maxAttempts: 1, name: "bad"))
                    // Running when its sibling dies: cancelled, and its late success refused.
                    try WorkflowStep(executor: "sleep", payloadJSON: #"{"seconds":0.5}"#, options: .init(name: "slow"))
                    try WorkflowGroup.sequence {
                        try WorkflowStep(
                            executor: "sleep", payloadJSON: #"{"seconds":0.4}"#, options: .init(name: "nested"))
                    }
                }
                try WorkflowStep(executor: "sum", payloadJSON: #"{"a":1,"b":1}"#, options: .init(name: "after"))
            })
        try await run(queue)
        let status = try #require(try await queue.workflow(id))
        #expect(status.state == .failed)
        #expect(status.error?.contains("job") == true && status.error?.contains("boom") == true)
        #expect(try await job(queue, status, named: "first").state == .succeeded)
        #expect(try await job(queue, status, named: "bad").state == .dead)
        #expect(try await job(queue, status, named: "slow").state == .cancelled)
        #expect(try await job(queue, status, named: "nested").state == .cancelled)
        #expect(try await job(queue, status, named: "after").state == .cancelled)
        #expect(try await queue.jobs(state: .waiting).isEmpty, "nothing waits forever")
        let succeeded = try await queue.events(after: 0, filter: EventFilter(workflow: id, kinds: [.succeeded]))
        #expect(succeeded.count == 1, "no sibling recorded a success after its group failed")
        let groups = try await queue.events(after: 0, filter: EventFilter(workflow: id, kinds: [.group]))
        #expect(
            groups.contains {
                $0.dataJSON?.contains("\"name\":\"fan\"") == true
                    && $0.dataJSON?.contains("\"state\":\"failed\"") == true
            })
        #expect(try await queue.events(after: 0, filter: EventFilter(workflow: id, kinds: [.workflow])).count == 1)
    }

    @Test(arguments: TestStore.all) func continueLetsTheRestRunAndRecordsTheFailure(store: TestStore) async throws {
        let queue = try await store.open()
        let id = try await queue.submit(
            try Workflow {
                try WorkflowGroup.parallel(name: "tolerant", onFailure: .continue) {
                    try WorkflowStep(executor: "fail", payloadJSON: "{}", options: .init(maxAttempts: 1, name: "bad"))
                    try WorkflowGroup.sequence {
                        try WorkflowStep(
                            executor: "fail", payloadJSON: "{}", options: .init(maxAttempts: 1, name: "bad2"))
                        try WorkflowStep(
                            executor: "sum", payloadJSON: #"{"a":1,"b":1}"#, options: .init(name: "after-bad2"))
                    }
                    try WorkflowStep(executor: "sum", payloadJSON: #"{"a":1,"b":1}"#, options: .init(name: "good"))
                }
                try WorkflowStep(executor: "sum", payloadJSON: #"{"a":2,"b":2}"#, options: .init(name: "then"))
            })
        try await run(queue)
        let status = try #require(try await queue.workflow(id))
        #expect(status.state == .succeeded)
        #expect(try await job(queue, status, named: "good").state == .succeeded)
        #expect(try await job(queue, status, named: "then").state == .succeeded, "what follows a continue group runs")
        // The inner sequence (policy fail) failed; its follower was dropped, not run.
        #expect(try await job(queue, status, named: "after-bad2").state == .cancelled)
        let events = try await queue.events(after: 0, filter: EventFilter(workflow: id, kinds: [.group]))
        let tolerant = try #require(events.first { $0.dataJSON?.contains("\"name\":\"tolerant\"") == true })
        #expect(tolerant.dataJSON?.contains("\"state\":\"succeeded\"") == true)
        #expect(tolerant.dataJSON?.contains("\"failed\":2") == true)
        #expect(tolerant.dataJSON?.contains("\"failures\"") == true)
    }

    @Test(arguments: TestStore.all) func emptyGroupsCompleteAtOnceAndDoNotReorderOrCancel(store: TestStore) async throws
    {
        let queue = try await store.open()
        let id = try await queue.submit(
            try Workflow {
                try WorkflowStep(executor: "sleep", payloadJSON: #"{"seconds":0.1}"#, options: .init(name: "a"))
                WorkflowGroup.parallel {}
                WorkflowGroup.sequence { WorkflowGroup.parallel {} }
                try WorkflowStep(executor: "sum", payloadJSON: #"{"a":1,"b":1}"#, options: .init(name: "b"))
            })
        let before = try #require(try await queue.workflow(id))
        #expect(
            try await job(queue, before, named: "b").state == .waiting, "b still waits for a behind the empty groups")
        try await run(queue)
        let status = try #require(try await queue.workflow(id))
        #expect(status.state == .succeeded)
        let a = try await job(queue, status, named: "a")
        let b = try await job(queue, status, named: "b")
        #expect(b.state == .succeeded && b.startedAt! >= a.finishedAt!)

        let empty = try await queue.submit(
            Workflow(root: WorkflowGroup(.parallel, [.group(WorkflowGroup(.sequence, []))])))
        #expect(try await queue.workflow(empty)?.state == .succeeded, "a workflow of empty groups is complete at once")
    }

    @Test(arguments: TestStore.all) func previousResultsFlowIntoTheNextStep(store: TestStore) async throws {
        let queue = try await store.open()
        let id = try await queue.submit(
            try Workflow {
                try WorkflowStep(executor: "sum", payloadJSON: #"{"a":1,"b":2}"#)
                try WorkflowStep(
                    executor: "echo", payloadJSON: #"{"keep":true}"#, options: .init(name: "one"), input: .previous)
                try WorkflowGroup.parallel {
                    try WorkflowStep(executor: "sum", payloadJSON: #"{"a":10,"b":0}"#)
                    try WorkflowGroup.sequence {
                        try WorkflowStep(executor: "sum", payloadJSON: #"{"a":20,"b":0}"#)
                        try WorkflowStep(executor: "sum", payloadJSON: #"{"a":30,"b":0}"#)
                    }
                }
                try WorkflowStep(executor: "echo", payloadJSON: "{}", options: .init(name: "fan-in"), input: .previous)
            })
        try await run(queue)
        let status = try #require(try await queue.workflow(id))
        #expect(status.state == .succeeded)
        let one = try await job(queue, status, named: "one")
        #expect(try one.result(as: JSONValue.self) == ["keep": true, "previous": ["sum": 3]])
        let fanIn = try await job(queue, status, named: "fan-in")
        #expect(try fanIn.result(as: JSONValue.self) == ["previous": [["sum": 10], ["sum": 30]]])
    }

    @Test(arguments: TestStore.all) func sharedContextKeepsEveryParallelWrite(store: TestStore) async throws {
        let queue = try await store.open()
        let id = try await queue.submit(
            try Workflow(context: ["seed": "s"]) {
                try WorkflowGroup.parallel {
                    for index in 0..<20 {
                        try WorkflowStep(SharedWriter.self, .init(key: "k\(index)", value: index))
                    }
                }
                try WorkflowStep(executor: SharedReader.name, payloadJSON: "{}", options: .init(name: "reader"))
            })
        try await run(queue)
        let status = try #require(try await queue.workflow(id))
        #expect(status.state == .succeeded)
        var expected: [String: JSONValue] = ["seed": "s"]
        for index in 0..<20 { expected["k\(index)"] = .integer(Int64(index)) }
        #expect(status.context == expected, "all 20 writes survived")
        let reader = try await job(queue, status, named: "reader")
        #expect(try reader.result(as: [String: JSONValue].self) == expected, "a later member sees them all")
    }

    @Test(arguments: TestStore.all) func cancellingAGroupAtDepthThreeDropsItsMembers(store: TestStore) async throws {
        let queue = try await store.open()
        let id = try await queue.submit(
            try Workflow {
                try WorkflowGroup.parallel(onFailure: .continue) {
                    try WorkflowGroup.sequence {
                        try WorkflowGroup.parallel(name: "deep") {
                            try WorkflowStep(
                                executor: "sleep", payloadJSON: #"{"seconds":60}"#, options: .init(name: "running"))
                            try WorkflowGroup.sequence {
                                try WorkflowStep(
                                    executor: "sleep", payloadJSON: #"{"seconds":60}"#, options: .init(name: "running2")
                                )
                                try WorkflowStep(
                                    executor: "sum", payloadJSON: #"{"a":1,"b":1}"#, options: .init(name: "not-started")
                                )
                            }
                        }
                        try WorkflowStep(
                            executor: "sum", payloadJSON: #"{"a":1,"b":1}"#, options: .init(name: "after-deep"))
                    }
                    try WorkflowStep(executor: "sum", payloadJSON: #"{"a":1,"b":1}"#, options: .init(name: "sibling"))
                }
            })
        // Claim only what starts: a job claimed ahead would sit behind a sleep in a slot's buffer.
        var options = quickOptions()
        options.prefetch = 0
        let pool = WorkerPool(
            queue: queue, queues: ["default"], concurrency: 4, executors: Self.executors, options: options)
        let running = Task { try await pool.run() }
        try await eventually(.seconds(30), "the sleeps to start") {
            let status = try await queue.workflow(id)
            return Set(status?.jobs.filter { $0.state == .running }.compactMap(\.name) ?? []) == ["running", "running2"]
        }
        let cancelled = try await queue.cancelWorkflow(id, group: "deep")
        #expect(try await job(queue, cancelled, named: "not-started").state == .cancelled)
        #expect(try await job(queue, cancelled, named: "running").state == .cancelled)
        try await within(.seconds(20), "the pool") { try await running.value }
        let status = try #require(try await queue.workflow(id))
        #expect(try await job(queue, status, named: "running2").state == .cancelled)
        #expect(
            try await job(queue, status, named: "after-deep").state == .cancelled,
            "the enclosing sequence fails with it")
        #expect(try await job(queue, status, named: "sibling").state == .succeeded, "the outer continue group goes on")
        #expect(status.state == .succeeded)
        #expect(try await queue.jobs(state: .waiting).isEmpty)
    }

    @Test(arguments: TestStore.all) func cancellingAWorkflowCancelsEverything(store: TestStore) async throws {
        let queue = try await store.open()
        let id = try await queue.submit(
            try Workflow {
                try WorkflowStep(executor: "sleep", payloadJSON: #"{"seconds":5}"#)
                try WorkflowGroup.parallel { try WorkflowStep(executor: "sum", payloadJSON: #"{"a":1,"b":1}"#) }
            })
        let status = try await queue.cancelWorkflow(id)
        #expect(status.state == .cancelled)
        #expect(status.jobs.allSatisfy { $0.state == .cancelled })
        await #expect(throws: JobQueueError.self) { try await queue.cancelWorkflow(id) }
        await #expect(throws: JobQueueError.self) { try await queue.cancelWorkflow(999) }
    }

    @Test(arguments: TestStore.all) func handlersHearAFailureInANestedGroup(store: TestStore) async throws {
        let queue = try await store.open()
        let finished = Mutex<[WorkflowFinish]>([])
        let failedSteps = Mutex<[JobID]>([])
        _ = try await queue.submit(
            try Workflow {
                try WorkflowGroup.sequence {
                    try WorkflowGroup.parallel {
                        try WorkflowStep(
                            executor: "fail", payloadJSON: #"{"message":"deep"}"#, options: .init(maxAttempts: 1))
                    }
                }
            },
            handlers: WorkflowHandlers(
                onStepFinish: { step in if step.state == .dead { failedSteps.withLock { $0.append(step.jobID) } } },
                onFinish: { done in finished.withLock { $0.append(done) } }))
        try await run(queue)
        try await eventually(.seconds(5), "the callbacks") { finished.withLock { !$0.isEmpty } }
        let done = try #require(finished.withLock { $0.first })
        #expect(done.state == .failed)
        #expect(done.error?.contains("deep") == true)
        #expect(failedSteps.withLock { $0.count } == 1)
    }

    @Test(arguments: TestStore.all) func badWorkflowsNameThePathAndStoreNothing(store: TestStore) async throws {
        let queue = try await store.open()
        let known = Set(BuiltinExecutors.names)
        let cases: [(String, String)] = [
            (
                #"{"sequence": [{"executor": "sum"}, {"executor": "sum"}, {"executor": "sum"}, {"parallel": [{"executor": "sm"}]}]}"#,
                "$.sequence[3].parallel[0].executor: unknown executor 'sm'"
            ),
            (#"{"parallel": [{"executor": "echo", "input": "previous"}]}"#, "$.parallel[0].input"),
            (#"{"sequence": [{"executor": "echo"}, {"executor": "echo", "after": [1]}]}"#, "$.sequence[1].after"),
            (#"{"sequence": [{"executor": "echo", "maxAttempts": 0}]}"#, "$.sequence[0]: maxAttempts"),
            (#"{"sequence": {"executor": "echo"}}"#, "$.sequence: must be an array"),
            (#"{"sequence": [], "onFailure": "explode"}"#, "$.onFailure"),
            (#"{"sequence": [], "context": [1]}"#, "$.context"),
            (#"[1, 2]"#, "$: expected a JSON object")
        ]
        for (json, message) in cases {
            do {
                let workflow = try Workflow(json: json, knownExecutors: known)
                try await queue.submit(workflow)
                Issue.record("accepted \(json)")
            } catch let error as JobQueueError {
                #expect(error.description.contains(message), "\(error.description) names \(message)")
            }
        }
        #expect(try await queue.jobs().isEmpty)
        #expect(try await queue.workflows().isEmpty)
    }
}
