import Foundation
import GRDB
import Testing

@testable import JobQCore
@testable import JobQSQL
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
        let workflow = try Workflow(name: "w") { WorkflowStep(try request(UniqueKey("k"))) }
        let error = await #expect(throws: JobQueueError.self) { try await queue.submit(workflow) }
        #expect(error?.description.contains("cannot have a unique key") == true)
        let schedule = Schedule(name: "s", request: try request(UniqueKey("k")), timing: .every(.seconds(1)))
        await #expect(throws: JobQueueError.self) { try await queue.addSchedule(schedule) }
        #expect(try await queue.jobs().isEmpty)
        #expect(try await queue.schedules().isEmpty)
    }

}
