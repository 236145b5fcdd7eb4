import Foundation
import Testing

@testable import JobQCore
@testable import JobQSQL

/// Awaiting a job's result, on every store: typed on success; a typed error for a job that ended
/// without one, for a wait that ran out, and for an unknown id; the job left as it is.
@Suite("Awaiting a job's result")
struct ResultTests {
    @Test(arguments: TestStore.all)
    func theResultArrivesWhenTheJobSucceeds(store: TestStore) async throws {
        let queue = try await store.open()
        let job = try await queue.enqueue(Sum.self, .init(a: 2, b: 3))
        let waiting = Task { try await queue.result(of: job.id, as: Sum.self, timeout: .seconds(30)) }
        try await Task.sleep(for: .milliseconds(200))
        try await WorkerPool(queue: queue, executors: [Sum()], options: quickOptions()).run()
        #expect(try await waiting.value == Sum.Output(sum: 5))
        // Once finished, the result is there at once.
        #expect(try await queue.result(of: job.id, as: Sum.self, timeout: .zero) == Sum.Output(sum: 5))
    }

    @Test(arguments: TestStore.all)
    func aJobThatEndsWithoutAResultSaysHowAndWhy(store: TestStore) async throws {
        let queue = try await store.open()
        let dead = try await queue.enqueue(
            FailExecutor.self, .init(message: "boom"), options: .init(maxAttempts: 1))
        let cancelled = try await queue.enqueue(Sum.self, .init(a: 1, b: 1), options: .init(queue: "idle"))
        let waiting = Task { try await queue.resultJSON(of: dead.id, timeout: .seconds(30)) }
        try await WorkerPool(queue: queue, executors: BuiltinExecutors.all, options: quickOptions()).run()
        await #expect(throws: JobResultError.endedWithoutResult(dead.id, state: .dead, error: "boom")) {
            try await waiting.value
        }
        _ = try await queue.cancel(cancelled.id)
        await #expect(throws: JobResultError.endedWithoutResult(cancelled.id, state: .cancelled, error: nil)) {
            try await queue.result(of: cancelled.id, as: Sum.self, timeout: .seconds(1))
        }
    }

    @Test(arguments: TestStore.all)
    func aWaitThatRunsOutOrIsCancelledLeavesTheJobAlone(store: TestStore) async throws {
        let queue = try await store.open()
        let job = try await queue.enqueue(Sum.self, .init(a: 1, b: 1))
        let started = ContinuousClock.now
        await #expect(throws: JobResultError.timedOut(job.id, state: .ready, after: .milliseconds(300))) {
            try await queue.result(of: job.id, as: Sum.self, timeout: .milliseconds(300))
        }
        // Bounded by the timeout, not by the job (a loaded CI machine answers slowly).
        #expect(ContinuousClock.now - started < .seconds(30))
        let waiting = Task { try await queue.result(of: job.id, as: Sum.self, timeout: .seconds(60)) }
        try await Task.sleep(for: .milliseconds(100))
        waiting.cancel()
        await #expect(throws: (any Error).self) { try await waiting.value }
        #expect(try await queue.job(job.id)?.state == .ready)
        await #expect(throws: JobResultError.noSuchJob(999_999)) {
            try await queue.resultJSON(of: 999_999, timeout: .seconds(1))
        }
    }

    /// A workflow's final result is what a step after it would get: a sequence's last member's,
    /// a parallel group's members' in order; awaited from the submission on, typed.
    @Test(arguments: TestStore.all)
    func aWorkflowsFinalResultArrivesWhenItSucceeds(store: TestStore) async throws {
        let queue = try await store.open()
        let id = try await queue.submit(
            try Workflow(name: "sums") {
                try WorkflowStep(Sum.self, .init(a: 1, b: 1))
                try WorkflowGroup.parallel {
                    try WorkflowStep(Sum.self, .init(a: 2, b: 3))
                    try WorkflowStep(Sum.self, .init(a: 4, b: 5))
                }
            })
        let waiting = Task { try await queue.result(ofWorkflow: id, as: [Sum.Output].self, timeout: .seconds(30)) }
        try await Task.sleep(for: .milliseconds(200))
        try await WorkerPool(queue: queue, executors: [Sum()], options: quickOptions()).run()
        #expect(try await waiting.value == [Sum.Output(sum: 5), Sum.Output(sum: 9)])
        let sequence = try await queue.submit(
            try Workflow {
                try WorkflowStep(Sum.self, .init(a: 1, b: 1))
                try WorkflowStep(Sum.self, .init(a: 20, b: 1))
            })
        try await WorkerPool(queue: queue, executors: [Sum()], options: quickOptions()).run()
        #expect(try await queue.resultJSON(ofWorkflow: sequence, timeout: .zero) == #"{"sum":21}"#)
        await #expect(throws: WorkflowResultError.self) {
            _ = try await queue.result(ofWorkflow: sequence, as: [String].self, timeout: .zero)
        }
    }

    /// A tree's final result is its root job's, once every job of the tree finished; a
    /// workflow that failed or was cancelled says so; an unknown id and a wait that runs out
    /// are typed errors too.
    @Test(arguments: TestStore.all)
    func aTreesResultIsItsRootsAndAFailedWorkflowSaysWhy(store: TestStore) async throws {
        let queue = try await store.open()
        let tree = TreeNode(executor: "echo") { TreeNode(executor: "echo", name: "leaf", each: "/ids") }
        let treeID = try await queue.submit(tree, input: ["ids": JSONValue.array([1, 2])] as [String: JSONValue])
        let failing = try await queue.submit(
            try Workflow {
                try WorkflowStep(FailExecutor.self, .init(message: "boom"), options: .init(maxAttempts: 1))
                try WorkflowStep(Sum.self, .init(a: 1, b: 1))
            })
        let cancelled = try await queue.submit(
            try Workflow { try WorkflowStep(Sum.self, .init(a: 1, b: 1), options: .init(queue: "idle")) })
        await #expect(throws: WorkflowResultError.timedOut(cancelled, after: .milliseconds(200))) {
            try await queue.resultJSON(ofWorkflow: cancelled, timeout: .milliseconds(200))
        }
        try await WorkerPool(queue: queue, executors: BuiltinExecutors.all + [Sum()], options: quickOptions()).run()
        #expect(try await queue.resultJSON(ofWorkflow: treeID, timeout: .seconds(5)) == #"{"ids":[1,2]}"#)
        await #expect {
            try await queue.resultJSON(ofWorkflow: failing, timeout: .seconds(5))
        } throws: { error in
            guard case WorkflowResultError.endedWithoutResult(failing, .failed, let text) = error else { return false }
            return text?.contains("boom") == true
        }
        _ = try await queue.cancelWorkflow(cancelled)
        await #expect {
            try await queue.resultJSON(ofWorkflow: cancelled, timeout: .seconds(5))
        } throws: { error in
            guard case WorkflowResultError.endedWithoutResult(cancelled, .cancelled, _) = error else { return false }
            return true
        }
        await #expect(throws: WorkflowResultError.noSuchWorkflow(999_999)) {
            try await queue.resultJSON(ofWorkflow: 999_999, timeout: .seconds(1))
        }
    }
}
