import Foundation
import Synchronization
import Testing

@testable import JobQCore
@testable import JobQSQL
@testable import JobQSQLite

/// WorkflowTests on the SQLite store only (a file, a restart, a second connection, SQLite's own locks);
/// the tests every store passes are in StoreConformance/.
extension WorkflowTests {
    @Test func mgCommandsExampleRunsInOrder() async throws {
        let sleep = #"{"executor": "sleep", "payload": {"seconds": 0.05}"#
        let file = """
            {"name": "mgcommand", "sequence": [
              \(sleep), "name": "d1"}, \(sleep), "name": "d2"}, \(sleep), "name": "d3"},
              {"executor": "echo", "payload": {"print": "concurrent {"}, "name": "open"},
              {"parallel": [\(sleep), "name": "p1"}, \(sleep), "name": "p2"}, \(sleep), "name": "p3"}]},
              {"executor": "echo", "payload": {"print": "}"}, "name": "close"},
              \(sleep), "name": "d4"}, \(sleep), "name": "d5"}, \(sleep), "name": "d6"},
              {"executor": "echo", "payload": {"print": "Finished"}, "name": "finished"}
            ]}
            """
        let queue = try JobQueue.inMemory()
        let id = try await queue.submit(try Workflow(json: file, knownExecutors: Set(BuiltinExecutors.names)))
        try await run(queue)
        let status = try #require(try await queue.workflow(id))
        #expect(status.state == .succeeded)
        #expect(status.name == "mgcommand")
        let order = ["d1", "d2", "d3", "open", "parallel", "close", "d4", "d5", "d6", "finished"]
        var previousEnd = Date.distantPast
        for name in order {
            if name == "parallel" {
                let members = try await ["p1", "p2", "p3"].asyncMap { try await job(queue, status, named: $0) }
                for member in members {
                    #expect(member.startedAt! >= previousEnd, "\(member.name!) starts after the one before the group")
                }
                let latestStart = members.map { $0.startedAt! }.max()!
                let earliestEnd = members.map { $0.finishedAt! }.min()!
                #expect(latestStart < earliestEnd, "the three parallel ones overlap")
                previousEnd = members.map { $0.finishedAt! }.max()!
            } else {
                let step = try await job(queue, status, named: name)
                #expect(step.state == .succeeded)
                #expect(step.startedAt! >= previousEnd, "\(name) starts after the previous member finished")
                previousEnd = step.finishedAt!
            }
        }
        let finished = try await queue.events(after: 0, filter: EventFilter(workflow: id, kinds: [.workflow]))
        #expect(finished.count == 1)
        #expect(finished.first?.dataJSON?.contains("\"state\":\"succeeded\"") == true)
    }

    @Test func aFailedAttemptWritesNothingToTheSharedContext() async throws {
        struct WriteThenFail: Executor {
            static let name = "write-then-fail"
            func run(_ input: JSONValue, context: JobContext) async throws -> JSONValue {
                try context.setShared("attempt\(context.attempt)", context.attempt)
                if context.attempt == 1 { throw ExecutorFailure("first attempt fails") }
                return .null
            }
        }
        let queue = try JobQueue.inMemory()
        let id = try await queue.submit(
            try Workflow { try WorkflowStep(executor: WriteThenFail.name, payloadJSON: "{}") })
        try await work(queue, executors: [WriteThenFail()])
        #expect(try await queue.workflow(id)?.context == ["attempt2": 2])
    }
}
