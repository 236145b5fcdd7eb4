import Foundation
import GRDB
import Testing

@testable import JobQCore
@testable import JobQSQL
@testable import JobQSQLite

/// A pool whose writes fail for a while (the store locked by another process past the busy
/// timeout) keeps what it has to write and writes it later; nothing stays `running`.
@Suite("Failed writes are retried")
struct WriteFailureTests {

    /// Renewals are by the jobs a pool holds, never by its worker id alone: a job it does not
    /// hold is left to expire even if its row names the worker.
    @Test(arguments: TestStore.all) func renewalsExtendOnlyTheLeasesAskedFor(store: TestStore) async throws {
        let queue = try await store.open()
        _ = try await queue.enqueue(
            contentsOf: (0..<2).map { _ in try JobRequest(executor: "sum", payloadJSON: #"{"a":1,"b":2}"#) })
        let claimed = try await queue.store.claim(
            queues: ["default"], limit: 2, workerID: "w", lease: .seconds(1), startingNow: 2)
        #expect(claimed.count == 2)
        let renewed = try await queue.store.renewLeases([claimed[0].id], workerID: "w", lease: .seconds(60))
        #expect(renewed == [claimed[0].id])
        #expect(
            try await queue.store.renewLeases([claimed[1].id], workerID: "someone-else", lease: .seconds(60)).isEmpty)
        try await Task.sleep(for: .milliseconds(1200))
        #expect(try await queue.store.reclaimExpiredLeases() == 1, "only the lease not renewed expired")
        #expect(try await queue.job(claimed[0].id)?.state == .running)
        #expect(try await queue.job(claimed[1].id)?.state != .running, "its lease expired and it was reclaimed")
    }

    /// A job that sat, unstarted, at the head of killed workers' buffers again and again is
    /// never ended for it: it becomes a suspect whose start is written before it runs, and then
    /// runs normally.
    @Test(arguments: TestStore.all) func aJobOnlyEverHeldByDyingWorkersIsNeverEndedForIt(store: TestStore) async throws
    {
        let queue = try await store.open()
        let job = try await queue.enqueue(
            try JobRequest(executor: "sum", payloadJSON: #"{"a":1,"b":2}"#, options: .init(maxAttempts: 1)))
        for round in 1...6 {
            let claimed = try await queue.store.claim(
                queues: ["default"], limit: 1, workerID: "dying-\(round)", lease: .milliseconds(1), startingNow: 0)
            #expect(claimed.map(\.id) == [job.id], "round \(round)")
            #expect(claimed.first?.isSuspect == (round > 1), "a suspect from its first unmarked death on")
            try await Task.sleep(for: .milliseconds(20))
            #expect(try await queue.store.reclaimExpiredLeases() == 1)
            let now = try #require(try await queue.job(job.id))
            #expect(now.state == .ready && now.attempt == 0, "round \(round): \(now.state), attempt \(now.attempt)")
        }
        try await work(queue)
        let done = try #require(try await queue.job(job.id))
        #expect(done.state == .succeeded && done.attempt == 1)
        let kinds = try await queue.events(after: 0, filter: EventFilter(jobIDs: [job.id]), limit: 100).map(\.kind)
        #expect(kinds.filter { $0 == .started }.count == 1 && kinds.last == .succeeded, "\(kinds)")
    }
}
