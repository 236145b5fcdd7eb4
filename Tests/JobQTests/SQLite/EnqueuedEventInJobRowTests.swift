import Foundation
import GRDB
import Testing

@testable import JobQCore
@testable import JobQSQL
@testable import JobQSQLite

/// On SQLite a job's `enqueued` event is read from the job's row, at the job's id (schema 16):
/// an enqueue writes no event row, and the feed reads as before, in commit order, without a gap
/// or a repeat; an older store keeps its event rows and goes on from above them.
@Suite("The enqueued event kept in the job's row (SQLite)")
struct EnqueuedEventInJobRowTests {
    /// The feed's ids, read through the public API in pages, as a follower reads them.
    static func feed(_ queue: JobQueue, pageSize: Int = 7) async throws -> [JobEvent] {
        var events: [JobEvent] = []
        var cursor: Int64 = 0
        while true {
            let page = try await queue.events(after: cursor, limit: pageSize)
            events += page
            guard let last = page.last else { return events }
            cursor = last.id
        }
    }

    @Test func anEnqueueWritesNoEventRowAndTheFeedShowsItAtTheJobsID() async throws {
        let store = try TemporaryStore()
        let queue = try store.open()
        let job = try await queue.enqueue(
            SumExecutor.self, .init(a: 1, b: 2), options: .init(queue: "q", priority: 3, name: "n"))
        #expect(try await queue.storedRows("SELECT COUNT(*) FROM jobq_events").first?.int64(0) == 0)
        let events = try await queue.events(after: 0)
        #expect(events.count == 1)
        let event = try #require(events.first)
        #expect(event.id == job.id && event.jobID == job.id && event.kind == .enqueued)
        #expect(event.queue == "q" && event.executor == "sum" && event.batch == nil)
        #expect(event.dataJSON?.hasPrefix(#"{"state":"ready","runAt":""#) == true)
        #expect(event.dataJSON?.hasSuffix(#","priority":3}"#) == true)
        // Filters read both parts of the feed alike.
        #expect(try await queue.events(after: 0, filter: .init(jobIDs: [job.id])).map(\.id) == [job.id])
        #expect(try await queue.events(after: 0, filter: .init(executor: "sum")).count == 1)
        #expect(try await queue.events(after: 0, filter: .init(executor: "echo")).isEmpty)
        #expect(try await queue.events(after: 0, filter: .init(kinds: [.started])).isEmpty)
        #expect(try await queue.events(after: 0, filter: .init(kinds: [.enqueued])).count == 1)
        #expect(try await queue.events(after: job.id).isEmpty)
        #expect(try await queue.latestEventID() == job.id)
    }

    /// Jobs and events interleave in the order their transactions committed: every id is new,
    /// ids only grow, and each job's events read enqueued, started, succeeded.
    @Test func jobsAndEventsShareOneCounterInCommitOrder() async throws {
        let store = try TemporaryStore()
        let queue = try store.open()
        var jobs: [JobID] = []
        for round in 0..<5 {
            for index in 0..<3 { jobs.append(try await queue.enqueue(SumExecutor.self, .init(a: round, b: index)).id) }
            try await work(queue)
        }
        let events = try await Self.feed(queue)
        #expect(events.count == jobs.count * 3)
        #expect(events.map(\.id) == events.map(\.id).sorted() && Set(events.map(\.id)).count == events.count)
        for job in jobs {
            #expect(events.filter { $0.jobID == job }.map(\.kind) == [.enqueued, .started, .succeeded])
        }
        // A job enqueued after the others' events comes after them in the feed.
        let last = try await queue.enqueue(SumExecutor.self, .init(a: 0, b: 0))
        #expect(last.id > events.last!.id)
        #expect(try await queue.events(after: events.last!.id).map(\.id) == [last.id])
    }

    /// A store of schema 15 keeps its `enqueued` event rows; jobs enqueued after the upgrade
    /// have ids above every earlier event, and the feed holds each event once.
    @Test func anUpgradedStoreKeepsItsEventRowsAndGoesOnAboveThem() async throws {
        let store = try TemporaryStore()
        try FileManager.default.copyItem(
            at: FixtureTests.directory.appendingPathComponent("store-v15.sqlite"),
            to: URL(fileURLWithPath: store.path))
        let before = try await DatabaseQueue(path: store.path).read { db in
            try Int64.fetchAll(db, sql: "SELECT id FROM jobq_events ORDER BY id")
        }
        let queue = try store.open()
        #expect(try await Self.feed(queue).map(\.id) == before, "the old feed, unchanged")
        let job = try await queue.enqueue(SumExecutor.self, .init(a: 1, b: 1))
        #expect(job.id > (before.last ?? 0))
        let after = try await Self.feed(queue)
        #expect(after.map(\.id) == before + [job.id])
        #expect(after.last?.kind == .enqueued && after.last?.jobID == job.id)
    }

    /// A deleted job's events go with it, its `enqueued` event too: a follower behind it is
    /// told, as for any deleted event.
    @Test func aDeletedJobsEnqueuedEventGoesWithItAndFollowersAreTold() async throws {
        let store = try TemporaryStore()
        let queue = try store.open()
        let first = try await queue.enqueue(SumExecutor.self, .init(a: 1, b: 1))
        let doomed = try await queue.enqueue(SumExecutor.self, .init(a: 2, b: 2), options: .init(queue: "idle"))
        try await queue.cancel(doomed.id)
        try await queue.delete(doomed.id)
        #expect(try await queue.events(after: 0).allSatisfy { $0.jobID != doomed.id })
        await #expect(throws: JobQueueError.self) { _ = try await queue.events(after: first.id) }
        #expect(try await queue.events(after: try await queue.latestEventID()).isEmpty)
    }
}
