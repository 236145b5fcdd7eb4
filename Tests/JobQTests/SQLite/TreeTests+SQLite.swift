import Foundation
import GRDB
import Synchronization
import Testing

@testable import JobQCore
@testable import JobQSQL
@testable import JobQSQLite

/// TreeTests on the SQLite store only (a file, a restart, a second connection, SQLite's own locks);
/// the tests every store passes are in StoreConformance/.
extension TreeTests {
    @Test(arguments: [
        ("/list", "points at a value of type object", #"{"list": {"a": 1}}"#),
        ("/missing", "points at nothing", #"{"list": [1]}"#),
        ("/list/7", "points at nothing", #"{"list": [1]}"#)
    ])
    func eachThatIsNotAnArrayFailsTheNodeClearly(pointer: String, message: String, input: String) async throws {
        let queue = try JobQueue.inMemory()
        let tree = TreeNode(executor: "echo") { TreeNode(executor: "echo", name: "child", each: pointer) }
        let id = try await queue.submit(Workflow { JobTree(tree, inputJSON: input) })
        try await run(queue)
        let status = try #require(try await queue.workflow(id))
        #expect(status.state == .failed)
        let child = try #require(status.jobs.first { $0.name == "child" })
        #expect(child.state == .dead)
        #expect(child.attempt == 0)
        #expect(child.error?.contains(message) == true, "\(child.error ?? "")")
        #expect(child.error?.contains(pointer) == true)
        #expect(status.error?.contains("node echo/child (job \(child.id)") == true, "\(status.error ?? "")")
    }

    @Test(arguments: [
        (#"{"tree": {"executor": "echo", "each": "/x"}}"#, "$.tree.each: the root runs once"),
        (
            #"{"tree": {"executor": "echo", "children": [{"executor": "echo", "each": "x"}]}}"#,
            "$.tree.children[0].each: 'x' is not a JSON Pointer"
        ),
        (
            #"{"tree": {"executor": "echo", "children": [{"executor": "echo"}, {"executor": "echo"}]}}"#,
            "$.tree.children[1].name: two children of 'echo' are named 'echo'"
        ),
        (
            #"{"tree": {"executor": "echo", "children": [{"executor": "ehco"}]}}"#,
            "$.tree.children[0].executor: unknown executor 'ehco'"
        ),
        (
            #"{"sequence": [{"executor": "echo"}, {"tree": {"executor": "echo", "children": [{"executor": "echo", "payload": 1}]}}]}"#,
            "$.sequence[1].tree.children[0].payload: only the root"
        ),
        (
            #"{"tree": {"executor": "echo", "onFailure": "maybe"}}"#,
            "$.tree.onFailure: must be \"failTree\" or \"continue\""
        ),
        (#"{"tree": {"executor": "echo", "with": {"a": 1}}}"#, "$.tree.with: the root's input is the tree's input"),
        (#"{"tree": {"executor": "echo"}, "maxJobs": 0}"#, "$.maxJobs: must be from 1"),
        (
            #"{"tree": {"executor": "echo", "children": [{"executor": "echo", "each": "/a~2"}]}}"#,
            "'~' must be followed by 0"
        ),
        (
            #"{"tree": {"executor": "echo", "children": [{"executor": "echo", "maxAttempts": 0}]}}"#,
            "$.tree.children[0]: maxAttempts must be at least 1"
        )
    ])
    func badTreesAreRefusedNamingThePathAndStoreNothing(file: String, message: String) async throws {
        let queue = try JobQueue.inMemory()
        await #expect {
            try await queue.submit(try Workflow(json: file, knownExecutors: Set(BuiltinExecutors.names)))
        } throws: { error in
            guard case JobQueueError.invalidInput(let text) = error else { return false }
            return text.contains(message)
        }
        #expect(try await queue.workflows().isEmpty)
        #expect(try await queue.jobs().isEmpty)
    }

    @Test func pruningAFinishedTreeRemovesItsGroupsAndNodes() async throws {
        let store = try TemporaryStore()
        let queue = try store.open()
        try await queue.submit(Cookbook.tree, input: "a-cookbook")
        try await run(queue)
        try await Task.sleep(for: .milliseconds(20))
        #expect(try await queue.prune(olderThan: .zero) > 0)
        let left = try await DatabaseQueue(path: store.path).read { db in
            try ["jobq_jobs", "jobq_workflows", "jobq_workflow_groups", "jobq_trees", "jobq_tree_nodes"].map {
                try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM \($0)") ?? -1
            }
        }
        #expect(left == [0, 0, 0, 0, 0])
    }
}
