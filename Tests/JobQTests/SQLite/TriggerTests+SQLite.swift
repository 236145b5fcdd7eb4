import Foundation
import GRDB
import Testing

@testable import JobQCore
@testable import JobQSQL
@testable import JobQSQLite

/// TriggerTests on the SQLite store only (a file, a restart, a second connection, SQLite's own locks);
/// the tests every store passes are in StoreConformance/.
extension TriggerTests {
    @Test func aOnceTaskRunsAtTheFirstEmitOnlyEvenAcrossARestart() async throws {
        let store = try TemporaryStore()
        var queue = try store.open()
        try await queue.addTrigger(try trigger("migrate", priority: 9, once: true))
        try await queue.addTrigger(try trigger("sync", dependsOn: ["migrate"]))
        let first = try await queue.emit("app.launched")
        #expect(first.jobs.map(\.name) == ["app.launched/migrate", "app.launched/sync"])
        #expect(first.jobs[1].state == .waiting)
        queue = try store.open()  // the app restarts
        let second = try await queue.emit("app.launched")
        #expect(second.jobs.map(\.name) == ["app.launched/sync"])
        #expect(second.jobs[0].state == .ready, "a dependency that does not run in this emit counts as met")
        let migrate = try #require(try await queue.triggers(event: "app.launched").first { $0.task == "migrate" })
        #expect(migrate.ranOnceAt != nil)
        #expect(!migrate.isActive)
        // Replacing the task keeps the record; removing and adding it again runs it once more.
        try await queue.addTrigger(try trigger("migrate", priority: 9, once: true))
        #expect(try await queue.emit("app.launched").jobs.map(\.name) == ["app.launched/sync"])
        try await queue.removeTrigger(event: "app.launched", task: "sync")
        try await queue.removeTrigger(event: "app.launched", task: "migrate")
        try await queue.addTrigger(try trigger("migrate", once: true))
        #expect(try await queue.emit("app.launched").jobs.map(\.name) == ["app.launched/migrate"])
    }

    @Test func aDedupeKeyWithin24HoursEnqueuesNothingAndAnswersWithTheFirstJobs() async throws {
        let store = try TemporaryStore()
        let queue = try store.open()
        try await queue.addTrigger(try trigger("charge", event: "order.paid"))
        try await queue.addTrigger(try trigger("receipt", event: "order.paid", dependsOn: ["charge"]))
        let first = try await queue.emit("order.paid", payloadJSON: #"{"order":1}"#, dedupe: "order-1")
        let again = try await queue.emit("order.paid", payloadJSON: #"{"order":1}"#, dedupe: "order-1")
        #expect(again.deduplicated)
        #expect(again.jobs.map(\.id) == first.jobs.map(\.id))
        #expect(try await queue.jobs().count == 2)
        #expect(!(try await queue.emit("order.paid", dedupe: "order-2")).deduplicated)
        #expect(try await queue.jobs().count == 4)
        // A day later the key is free again.
        try await DatabaseQueue(path: store.path).write { db in
            try db.execute(
                sql: "UPDATE jobq_trigger_emits SET emitted_at = emitted_at - 86401 WHERE dedupe = 'order-1'")
        }
        let later = try await queue.emit("order.paid", dedupe: "order-1")
        #expect(!later.deduplicated)
        #expect(try await queue.jobs().count == 6)
    }
}
