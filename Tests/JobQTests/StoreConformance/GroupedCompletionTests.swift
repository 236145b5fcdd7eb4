import Foundation
import GRDB
import Testing

@testable import JobQCore
@testable import JobQSQL
@testable import JobQSQLite

@Suite("Batches and tracking sets")
struct GroupTests {
    @Test(arguments: TestStore.all) func batchFiresItsCallbacksOnceWithASummary(store: TestStore) async throws {
        let queue = try await store.open()
        try await queue.createBatch(
            "b", onComplete: try JobRequest(executor: "echo", payloadJSON: #"{"kind":"complete"}"#),
            onSuccess: try JobRequest(executor: "echo", payloadJSON: #"{"kind":"success"}"#))
        let members = try await queue.enqueue(
            contentsOf: (1...5).map { try JobRequest(SumExecutor.self, .init(a: $0, b: 0), options: .init(batch: "b")) }
        )
        try await work(queue)
        #expect(try await queue.batch("b")?.state == .open, "an open batch does not fire")
        // An open batch takes more jobs.
        let late = try await queue.enqueue(SumExecutor.self, .init(a: 10, b: 0), options: .init(batch: "b"))
        let closed = try await queue.closeBatch("b")
        #expect(closed.state == .closed)
        try await work(queue)

        let batch = try #require(try await queue.batch("b"))
        #expect(batch.state == .fired)
        #expect(batch.total == 6 && batch.succeeded == 6 && batch.pending == 0)
        let completeID = try #require(batch.completeJobID)
        let successID = try #require(batch.successJobID)
        let complete = try #require(try await queue.job(completeID))
        let success = try #require(try await queue.job(successID))
        #expect(complete.state == .succeeded && success.state == .succeeded)
        struct Payload: Decodable {
            struct Summary: Decodable {
                var name: String
                var counts: [String: Int]
                var results: [String: JSONValue]
            }
            var kind: String
            var batch: Summary
        }
        let payload = try complete.payload(as: Payload.self)
        #expect(payload.kind == "complete")
        #expect(payload.batch.counts == ["total": 6, "succeeded": 6, "dead": 0, "cancelled": 0])
        #expect(payload.batch.results["\(late.id)"] == .object(["sum": .integer(10)]))
        #expect(payload.batch.results.count == members.count + 1)
        #expect(try await queue.events(after: 0, filter: EventFilter(kinds: [.batch])).count == 1)
        await #expect(throws: JobQueueError.self) {
            try await queue.enqueue(SumExecutor.self, .init(a: 1, b: 0), options: .init(batch: "b"))
        }
    }

    @Test(arguments: TestStore.all) func onSuccessIsSkippedWhenAMemberFails(store: TestStore) async throws {
        let queue = try await store.open()
        try await queue.createBatch(
            "mixed", onComplete: try JobRequest(executor: "echo", payloadJSON: "{}"),
            onSuccess: try JobRequest(executor: "echo", payloadJSON: "{}"))
        try await queue.enqueue(SumExecutor.self, .init(a: 1, b: 1), options: .init(batch: "mixed"))
        try await queue.enqueue(FailExecutor.self, .init(), options: .init(maxAttempts: 1, batch: "mixed"))
        let cancelled = try await queue.enqueue(
            SumExecutor.self, .init(a: 1, b: 1), options: .init(delay: .seconds(60), batch: "mixed"))
        try await queue.cancel(cancelled.id)
        try await queue.closeBatch("mixed")
        try await work(queue)
        let batch = try #require(try await queue.batch("mixed"))
        #expect(batch.state == .fired)
        #expect(batch.succeeded == 1 && batch.dead == 1 && batch.cancelled == 1)
        #expect(batch.completeJobID != nil)
        #expect(batch.successJobID == nil)
    }

    @Test(arguments: TestStore.all) func closingAnEmptyBatchFiresAtOnce(store: TestStore) async throws {
        let queue = try await store.open()
        try await queue.createBatch("empty", onComplete: try JobRequest(executor: "echo", payloadJSON: "{}"))
        let closed = try await queue.closeBatch("empty")
        #expect(closed.state == .fired)
        #expect(closed.completeJobID != nil)
        await #expect(throws: JobQueueError.self) { try await queue.closeBatch("empty") }
        await #expect(throws: JobQueueError.self) { try await queue.createBatch("empty") }
        await #expect(throws: JobQueueError.self) {
            try await queue.enqueue(SumExecutor.self, .init(a: 1, b: 1), options: .init(batch: "nope"))
        }
        await #expect(throws: JobQueueError.self) {
            try await queue.createBatch("bad", onComplete: try JobRequest(executor: "echo", payloadJSON: "[1]"))
        }
        #expect(try await queue.jobs().count == 1, "only the empty batch's callback was enqueued")
    }

    @Test(arguments: TestStore.all) func trackingSetFiresEachRoundOnceWithLatestResults(store: TestStore) async throws {
        let queue = try await store.open()
        try await queue.addTrackingSet("pair", members: [.executor("sum"), .job(named: "greeting")])
        try await queue.enqueue(SumExecutor.self, .init(a: 1, b: 1))
        try await queue.enqueue(SumExecutor.self, .init(a: 2, b: 2))
        try await work(queue, concurrency: 1)
        #expect(try await queue.events(after: 0, filter: EventFilter(kinds: [.tracking])).isEmpty)
        try await queue.enqueue(JobRequest(executor: "echo", payloadJSON: #""hi""#, options: .init(name: "greeting")))
        try await queue.enqueue(JobRequest(executor: "echo", payloadJSON: #""unnamed""#))
        try await work(queue)
        var firings = try await queue.events(after: 0, filter: EventFilter(kinds: [.tracking]))
        #expect(firings.count == 1)
        struct Firing: Decodable {
            var set: String
            var round: Int
            var results: [String: JSONValue]
        }
        let first = try #require(try firings[0].data(as: Firing.self))
        #expect(first.round == 1)
        #expect(first.results["job:greeting"] == .string("hi"))
        #expect(first.results["sum"] == .object(["sum": .integer(4)]))

        try await queue.enqueue(
            JobRequest(executor: "echo", payloadJSON: #""again""#, options: .init(name: "greeting")))
        try await work(queue)
        #expect(
            try await queue.events(after: 0, filter: EventFilter(kinds: [.tracking])).count == 1,
            "sum has no new result yet")
        try await queue.enqueue(SumExecutor.self, .init(a: 5, b: 5))
        try await work(queue)
        firings = try await queue.events(after: 0, filter: EventFilter(kinds: [.tracking]))
        #expect(firings.count == 2)
        #expect(try firings[1].data(as: Firing.self)?.results["job:greeting"] == .string("again"))
        #expect(try await queue.trackingSets().first?.round == 2)
        try await queue.removeTrackingSet("pair")
        #expect(try await queue.trackingSets().isEmpty)
        await #expect(throws: JobQueueError.self) { try await queue.removeTrackingSet("pair") }
    }
}
