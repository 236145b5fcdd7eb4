import Foundation
import GRDB
import Testing

@testable import JobQCore
@testable import JobQSQL
@testable import JobQSQLite

/// Event triggers through the library: ordering, dependencies, once, dedupe, control by name.
@Suite("Event triggers")
struct TriggerTests {
    func trigger(
        _ task: String, event: String = "app.launched", executor: String = "echo", payload: String = "{}",
        priority: Int = 0,
        dependsOn: [String] = [], once: Bool = false
    ) throws -> Trigger {
        Trigger(
            event: event, task: task,
            request: try JobRequest(
                executor: executor, payloadJSON: payload, options: .init(queue: "boot", priority: priority)),
            dependsOn: dependsOn, once: once)
    }

    @Test(arguments: TestStore.all) func anEmitRunsHigherPriorityFirstAndDependentsAfterTheirDependencies(
        store: TestStore
    ) async throws {
        let queue = try await store.open()
        try await queue.addTrigger(try trigger("a"))
        try await queue.addTrigger(try trigger("b", priority: 10))
        try await queue.addTrigger(try trigger("c", priority: 5, dependsOn: ["a"]))
        try await queue.addTrigger(try trigger("d", priority: 20, dependsOn: ["b"]))
        try await queue.addTrigger(try trigger("other", event: "app.closed"))
        let emitted = try await queue.emit("app.launched", payloadJSON: #"{"version":"2.1"}"#)
        #expect(!emitted.deduplicated)
        #expect(emitted.jobs.map(\.name) == ["app.launched/b", "app.launched/d", "app.launched/a", "app.launched/c"])
        #expect(emitted.jobs.map(\.state) == [.ready, .waiting, .ready, .waiting])
        #expect(emitted.jobs.map(\.priority) == [10, 20, 0, 5])
        #expect(emitted.jobs.allSatisfy { $0.queue == "boot" })
        // One worker slot: b (10) is claimed before a (0); d and c start only after b and a succeeded.
        try await work(queue, queues: ["boot"], concurrency: 1)
        let finished = Dictionary(uniqueKeysWithValues: try await queue.jobs(state: .succeeded).map { ($0.name!, $0) })
        #expect(finished.count == 4)
        func job(_ task: String) throws -> Job { try #require(finished["app.launched/\(task)"]) }
        let starts = try await queue.events(after: 0, filter: EventFilter(kinds: [.started]), limit: 10).map(\.jobID)
        #expect(
            try starts.firstIndex(of: job("b").id)! < starts.firstIndex(of: job("a").id)!, "claimed in priority order")
        #expect(try job("d").startedAt! >= job("b").finishedAt!)
        #expect(try job("c").startedAt! >= job("a").finishedAt!)
    }

    @Test(arguments: TestStore.all) func theEmittedPayloadIsSetUnderEventInEachTasksPayload(store: TestStore)
        async throws
    {
        let queue = try await store.open()
        try await queue.addTrigger(try trigger("report", payload: #"{"format":"pdf","event":"overwritten"}"#))
        let job = try #require(try await queue.emit("app.launched", payloadJSON: #"{"user":7}"#).jobs.first)
        #expect(
            try JSONDecoder().decode(JSONValue.self, from: Data(job.payloadJSON.utf8))
                == .object(["format": .string("pdf"), "event": .object(["user": .integer(7)])]))
        // Without a payload, "event" is an empty object.
        let plain = try #require(try await queue.emit("app.launched").jobs.first)
        #expect(plain.payloadJSON.contains(#""event":{}"#))
    }

    @Test(arguments: TestStore.all) func cyclesUnknownDependenciesAndBadTasksAreRefusedAndStoreNothing(store: TestStore)
        async throws
    {
        let queue = try await store.open()
        try await queue.addTrigger(try trigger("a"))
        try await queue.addTrigger(try trigger("b", dependsOn: ["a"]))
        try await queue.addTrigger(try trigger("c", dependsOn: ["b"]))
        let refused: [(Trigger, String)] = [
            (try trigger("a", dependsOn: ["c"]), "cycle (a -> c -> b -> a)"),
            (try trigger("a", dependsOn: ["a"]), "cannot depend on itself"),
            (try trigger("d", dependsOn: ["zzz"]), "depends on 'zzz', which is not a task of event 'app.launched'"),
            (try trigger("d", payload: "[1,2]"), "the payload must be a JSON object"),
            (try trigger("bad name"), "task name 'bad name' must be"),
            (try trigger("d", event: ""), "event name '' must be"),
            (try trigger("d", dependsOn: ["a", "a"]), "names a task twice")
        ]
        for (bad, message) in refused {
            let error = await #expect(throws: JobQueueError.self) { try await queue.addTrigger(bad) }
            #expect(error?.description.contains(message) == true, "\(String(describing: error))")
        }
        let stored = try await queue.triggers()
        #expect(stored.map(\.task) == ["a", "b", "c"])
        #expect(stored[0].dependsOn.isEmpty, "the refused replacement left task a as it was")
        await #expect(throws: JobQueueError.self) { try await queue.emit("app.launched", payloadJSON: "{nope") }
        await #expect(throws: JobQueueError.self) { try await queue.emit("bad event") }
        #expect(try await queue.jobs().isEmpty)
    }

    @Test(arguments: TestStore.all) func pauseResumeAndRemoveByNameAreEvents(store: TestStore) async throws {
        let queue = try await store.open()
        try await queue.addTrigger(try trigger("a"))
        try await queue.addTrigger(try trigger("b", dependsOn: ["a"]))
        try await queue.pauseTrigger(event: "app.launched", task: "a")
        let paused = try await queue.emit("app.launched")
        #expect(paused.jobs.map(\.name) == ["app.launched/b"])
        try await queue.resumeTrigger(event: "app.launched", task: "a")
        #expect(try await queue.emit("app.launched").jobs.count == 2)
        let error = await #expect(throws: JobQueueError.self) {
            try await queue.removeTrigger(event: "app.launched", task: "a")
        }
        #expect(error?.description.contains("depends on a") == true)
        try await queue.removeTrigger(event: "app.launched", task: "b")
        try await queue.removeTrigger(event: "app.launched", task: "a")
        await #expect(throws: JobQueueError.self) { try await queue.removeTrigger(event: "app.launched", task: "a") }
        await #expect(throws: JobQueueError.self) { try await queue.pauseTrigger(event: "app.launched", task: "nope") }
        let emptied = try await queue.emit("app.launched")
        #expect(emptied.jobs.isEmpty)
        let changes = try await queue.events(after: 0, filter: EventFilter(kinds: [.trigger]), limit: 100).map {
            event in
            let data = try JSONDecoder().decode([String: JSONValue].self, from: Data(event.dataJSON!.utf8))
            return [data["task"], data["change"]].compactMap { value -> String? in
                if case .string(let text)? = value { return text }
                return nil
            }.joined(separator: " ")
        }
        #expect(
            changes == [
                "a added", "b added", "a paused", "emitted", "a resumed", "emitted", "b removed", "a removed", "emitted"
            ])
    }
}
