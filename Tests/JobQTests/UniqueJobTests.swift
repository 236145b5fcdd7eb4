import Foundation
import GRDB
import Testing

@testable import JobQCore
@testable import JobQSQLite

/// Unique jobs: a key held by one job at a time, under a partial unique index.
@Suite("Unique jobs")
struct UniqueJobTests {
    func request(_ key: UniqueKey?, executor: String = "echo", payload: String = #"{"n":1}"#) throws -> JobRequest {
        try JobRequest(executor: executor, payloadJSON: payload, options: .init(unique: key))
    }

    @Test(arguments: TestStore.all) func aSecondEnqueueOfAnUnfinishedKeyReturnsTheFirstJob(store: TestStore)
        async throws
    {
        let queue = try await store.open()
        let first = try await queue.enqueueReportingDuplicates(contentsOf: [try request(UniqueKey("report:1"))])[0]
        let second = try await queue.enqueueReportingDuplicates(contentsOf: [
            try request(UniqueKey("report:1"), payload: #"{"n":2}"#)
        ])[0]
        #expect(!first.existed)
        #expect(second.existed)
        #expect(second.job.id == first.job.id)
        #expect(second.job.payloadJSON == #"{"n":1}"#, "the existing job is returned as it is")
        #expect(first.job.uniqueKey == "report:1")
        #expect(first.job.jsonLine.contains(#""unique":"report:1""#))
        // Another key, and no key, are not affected.
        #expect(
            !(try await queue.enqueueReportingDuplicates(contentsOf: [try request(UniqueKey("report:2"))])[0].existed))
        try await queue.enqueue(try request(nil))
        try await queue.enqueue(try request(nil))
        #expect(try await queue.jobs().count == 4)
        // The plain `enqueue` returns the holder too.
        #expect(try await queue.enqueue(try request(UniqueKey("report:1"))).id == first.job.id)
    }

    @Test(arguments: TestStore.all) func oneBatchWithAKeyTwiceStoresOneJob(store: TestStore) async throws {
        let queue = try await store.open()
        let outcomes = try await queue.enqueueReportingDuplicates(contentsOf: [
            try request(UniqueKey("k")), try request(nil), try request(UniqueKey("k"))
        ])
        #expect(outcomes.map(\.existed) == [false, false, true])
        #expect(outcomes[2].job.id == outcomes[0].job.id)
        #expect(try await queue.jobs().count == 2)
        // Only the new jobs wrote `enqueued` events.
        #expect(try await queue.events(after: 0, limit: 10).filter { $0.kind == .enqueued }.count == 2)
    }

    @Test func theKeyIsHeldThroughRetriesAndFreedWhenTheJobFinishes() async throws {
        let store = try TemporaryStore()
        let queue = try store.open()
        let failing = try JobRequest(
            executor: "fail", payloadJSON: #"{"succeedFromAttempt":2}"#,
            options: .init(maxAttempts: 2, unique: UniqueKey("sync")))
        let job = try await queue.enqueue(failing)
        // First attempt fails; while it waits for its retry it still holds the key.
        var options = quickOptions(stopWhen: .queuesEmpty)
        options.retryBackoff = RetryBackoff(base: .seconds(30), maximum: .seconds(30), jitter: 0)
        try await work(queue, options: options)
        #expect(try await queue.job(job.id)?.state == .failed)
        #expect(try await queue.enqueue(try request(UniqueKey("sync"))).id == job.id)
        // Make it due and run it: it succeeds, finishes, and lets go of the key.
        try await queue.retry(job.id)
        try await work(queue)
        #expect(try await queue.job(job.id)?.state == .succeeded)
        let next = try await queue.enqueueReportingDuplicates(contentsOf: [try request(UniqueKey("sync"))])[0]
        #expect(!next.existed)
        #expect(next.job.id != job.id)
    }

    @Test func aPeriodKeepsTheKeyAfterTheJobFinishesThenLetsGo() async throws {
        let store = try TemporaryStore()
        let queue = try store.open()
        let key = UniqueKey("nightly", for: .seconds(3600))
        #expect(key.finishedStates == [.succeeded, .dead, .cancelled])
        let job = try await queue.enqueue(try request(key))
        try await queue.cancel(job.id)
        #expect(try await queue.enqueue(try request(key)).id == job.id, "finished within the period: still held")
        // An hour and a second later (the finish moved back rather than the clock forward):
        try await DatabaseQueue(path: store.path).write { db in
            try db.execute(sql: "UPDATE jobs SET finished_at = finished_at - 3601 WHERE id = ?", arguments: [job.id])
        }
        let later = try await queue.enqueueReportingDuplicates(contentsOf: [try request(key)])[0]
        #expect(!later.existed)
        #expect(later.job.id != job.id)
    }

    @Test(arguments: TestStore.all) func finishedStatesChooseWhichOutcomesKeepTheKey(store: TestStore) async throws {
        let queue = try await store.open()
        let key = try UniqueKey("import", for: nil, states: [.ready, .succeeded])
        #expect(key.finishedStates == [.succeeded])
        let first = try await queue.enqueue(try request(key))
        try await queue.cancel(first.id)
        // Cancelled is not kept: a new job may take the key.
        let second = try await queue.enqueue(try request(key))
        #expect(second.id != first.id)
        // A succeeded one keeps it for ever (no period).
        try await work(queue)
        #expect(try await queue.job(second.id)?.state == .succeeded)
        #expect(try await queue.enqueue(try request(key)).id == second.id)
        // A period that no listed state could use is refused.
        #expect(throws: JobQueueError.self) { try UniqueKey("x", for: .seconds(1), states: [.ready]) }
    }

    @Test(arguments: TestStore.all) func retryingAFinishedJobWhoseKeyANewerJobHoldsIsRefused(store: TestStore)
        async throws
    {
        let queue = try await store.open()
        let old = try await queue.enqueue(try request(UniqueKey("k")))
        try await queue.cancel(old.id)
        let newer = try await queue.enqueue(try request(UniqueKey("k")))
        #expect(newer.id != old.id)
        let error = await #expect(throws: JobQueueError.self) { try await queue.retry(old.id) }
        #expect(
            error?.description.contains("job \(newer.id) (ready) holds now") == true, "\(String(describing: error))")
        #expect(try await queue.job(old.id)?.state == .cancelled, "the refused retry changed nothing")
        // Once the newer job lets go, the retry takes the key back.
        try await queue.cancel(newer.id)
        #expect(try await queue.retry(old.id).state == .ready)
        #expect(try await queue.enqueue(try request(UniqueKey("k"))).id == old.id)
        // Retrying the newer one now collides with the old one.
        await #expect(throws: JobQueueError.self) { try await queue.retry(newer.id) }
    }

    @Test(arguments: TestStore.all) func badKeysAndWorkflowStepsWithKeysAreRefused(store: TestStore) async throws {
        let queue = try await store.open()
        await #expect(throws: JobQueueError.self) { try await queue.enqueue(try request(UniqueKey(""))) }
        await #expect(throws: JobQueueError.self) { try await queue.enqueue(try request(UniqueKey("k", for: .zero))) }
        let workflow = try Workflow(name: "w") { Step(try request(UniqueKey("k"))) }
        let error = await #expect(throws: JobQueueError.self) { try await queue.submit(workflow) }
        #expect(error?.description.contains("cannot have a unique key") == true)
        let schedule = Schedule(name: "s", request: try request(UniqueKey("k")), timing: .every(.seconds(1)))
        await #expect(throws: JobQueueError.self) { try await queue.addSchedule(schedule) }
        #expect(try await queue.jobs().isEmpty)
        #expect(try await queue.schedules().isEmpty)
    }

    @Test func jobLinesCarryUniqueKeys() throws {
        let plain = try JobRequest(jsonLine: #"{"executor": "echo", "unique": "k1"}"#)
        #expect(plain.options.unique == UniqueKey("k1"))
        let full = try JobRequest(
            jsonLine: #"{"executor": "echo", "unique": {"key": "k2", "for": "1h", "states": ["succeeded"]}}"#)
        #expect(full.options.unique == UniqueKey("k2", for: .seconds(3600), finishedStates: [.succeeded]))
        #expect(throws: JobQueueError.self) { try JobRequest(jsonLine: #"{"executor": "echo", "unique": 5}"#) }
        #expect(throws: JobQueueError.self) {
            try JobRequest(jsonLine: #"{"executor": "echo", "unique": {"key": "k", "states": ["sleeping"]}}"#)
        }
        #expect(throws: JobQueueError.self) {
            try JobRequest(jsonLine: #"{"executor": "echo", "unique": {"key": "k", "for": "1h", "states": ["ready"]}}"#)
        }
    }
}
