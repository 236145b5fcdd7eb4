import Foundation
import JobQ
import Testing

@testable import JobQCore
@testable import JobQSQL

/// Retention and the cleaner, on every store.
@Suite("Retention and the cleaner")
struct RetentionTests {
    /// Runs the ready jobs of `queue` to success (or death, with `dead`) through the store.
    static func finish(_ queue: JobQueue, _ name: String, dead: Bool = false) async throws {
        let claimed = try await queue.store.claim(
            queues: [name], limit: 100, workerID: "w", lease: .seconds(30), startingNow: 100)
        let outcome: AttemptOutcome = dead ? .dead(error: "no", timedOut: false) : .succeeded(resultJSON: "{}")
        _ = try await queue.store.recordOutcomes(claimed.map { ($0, outcome) }, starting: [], workerID: "w")
    }

    static func request(_ queue: String, after: [JobID] = [], lane: String? = nil) throws -> JobRequest {
        try JobRequest(executor: "echo", payloadJSON: "{}", options: .init(queue: queue, after: after, lane: lane))
    }

    /// One pass deletes a finished job past its retention with its events; keeps finished jobs
    /// something unfinished refers to (a waiting dependent, a lane's tail) and those within
    /// their retention; then a follower whose cursor is before the deleted events is told.
    @Test(arguments: TestStore.all) func aPassDeletesOldJobsAndKeepsReferencedOnes(store: TestStore) async throws {
        let queue = try await store.open()
        let plain = try await queue.enqueue(try Self.request("q"))
        let needed = try await queue.enqueue(try Self.request("q"))
        let laneTail = try await queue.enqueue(try Self.request("q", lane: "L"))
        // Waits on `needed` in another queue, never run: `needed` stays referred to.
        _ = try await queue.enqueue(try Self.request("other", after: [needed.id]))
        // A follower's cursor at `plain`'s first event, read from the table: `latestEventID()` on
        // PostgreSQL stops before transactions still running anywhere on the server (other tests'
        // in a parallel run), and may say 0, "from the start", which is never refused. On SQLite
        // a job's `enqueued` event is read from its row, at the job's id.
        let cursorBefore =
            store == .sqlite
            ? plain.id
            : try #require(
                try await queue.storedRows("SELECT MIN(id) FROM jobq_events WHERE job_id = ?", [plain.id]).first?
                    .optionalInt64(0))
        if store == .sqlite {
            #expect(try await queue.events(after: 0).first { $0.jobID == plain.id }?.id == plain.id)
        }
        try await Self.finish(queue, "q")
        let recentDead = try await queue.enqueue(try Self.request("d"))
        try await Self.finish(queue, "d", dead: true)
        try await queue.setRetention(QueueRetention(succeeded: .milliseconds(50)), for: "q")
        try await queue.setRetention(QueueRetention(dead: .seconds(3600)), for: "d")
        #expect(try await queue.retention(for: "q").succeeded == .milliseconds(50))
        #expect(try await queue.retention(for: "d") == QueueRetention(dead: .seconds(3600)))
        try await Task.sleep(for: .milliseconds(120))

        let report = try await queue.clean()
        #expect(report.ran && report.jobs == 1 && report.keptForReferences == 2, "\(report)")
        #expect(try await queue.job(plain.id) == nil)
        #expect(try await queue.job(needed.id)?.state == .succeeded, "a waiting job depends on it")
        #expect(try await queue.job(laneTail.id)?.state == .succeeded, "the lane's tail")
        #expect(try await queue.job(recentDead.id)?.state == .dead, "within its retention")
        #expect(try await queue.events(after: 0).allSatisfy { $0.jobID != plain.id }, "its events went with it")

        await #expect {
            _ = try await queue.events(after: cursorBefore)
        } throws: { error in
            guard case JobQueueError.eventsDeleted(let message) = error else { return false }
            return message.contains("were deleted") && message.contains("--since")
        }
        #expect(!(try await queue.events(after: 0)).isEmpty, "from the oldest kept: no refusal")
        #expect(try await queue.events(after: try await queue.latestEventID()).isEmpty, "a cursor past the gap")
        #expect(try await queue.clean().jobs == 0, "nothing more to delete")
    }

    /// Events past the store's event retention are deleted oldest first, and their jobs stay.
    @Test(arguments: TestStore.all) func oldEventsAreDeletedByAge(store: TestStore) async throws {
        let queue = try await store.open()
        let job = try await queue.enqueue(try Self.request("q"))
        try await queue.setDefaultRetention(StoreRetention(jobs: .standard, events: .milliseconds(50)))
        #expect(try await queue.retentionSettings().store.events == .milliseconds(50))
        try await Task.sleep(for: .milliseconds(120))
        let report = try await queue.clean()
        #expect(report.events == 1 && report.jobs == 0, "\(report)")
        #expect(try await queue.job(job.id)?.state == .ready)
        #expect(try await queue.events(after: 0).isEmpty)
    }

    /// At most one cleaner at a time: the lease is held by one holder until it expires or is
    /// given back, and a pass that cannot take it does nothing.
    @Test(arguments: TestStore.all) func twoCleanersNeverRunAtOnce(store: TestStore) async throws {
        let queue = try await store.open()
        #expect(try await queue.store.acquireLease(JobQueue.cleanerLease, holder: "a", for: .seconds(60)))
        #expect(!(try await queue.store.acquireLease(JobQueue.cleanerLease, holder: "b", for: .seconds(60))))
        #expect(try await queue.store.acquireLease(JobQueue.cleanerLease, holder: "a", for: .seconds(60)), "renewed")
        #expect(try await queue.clean().ran == false, "a held the lease")
        try await queue.store.releaseLease(JobQueue.cleanerLease, holder: "a")
        #expect(try await queue.store.acquireLease(JobQueue.cleanerLease, holder: "b", for: .milliseconds(50)))
        try await Task.sleep(for: .milliseconds(100))
        #expect(
            try await queue.store.acquireLease(JobQueue.cleanerLease, holder: "a", for: .seconds(60)), "b's expired")
    }

    /// A worker pool runs the cleaner on its own, and bad retention is refused.
    @Test(arguments: TestStore.all) func aPoolCleansAndBadRetentionIsRefused(store: TestStore) async throws {
        let queue = try await store.open()
        await #expect(throws: JobQueueError.self) {
            try await queue.setRetention(QueueRetention(succeeded: .zero), for: "q")
        }
        #expect(try await queue.retention(for: "q") == .standard)
        let job = try await queue.enqueue(try JobRequest(Sum.self, .init(a: 1, b: 2), options: .init(queue: "q")))
        try await queue.setRetention(QueueRetention(succeeded: .milliseconds(100)), for: "q")
        var options = WorkerPool.Options()
        options.cleanerInterval = .milliseconds(300)
        let pool = WorkerPool(queue: queue, queues: ["q"], concurrency: 1, executors: [Sum()], options: options)
        let task = Task { try await pool.run() }
        defer { task.cancel() }
        let deadline = ContinuousClock.now + .seconds(20)
        while try await queue.job(job.id) != nil, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(try await queue.job(job.id) == nil, "the pool's cleaner deleted the finished job")
    }

    /// A finished unique job keeps only what its rule keeps: the default rule (no finished
    /// state) and a state its rule does not name release the key, and the cleaner deletes the
    /// job; a job within its `for` period is kept.
    @Test(arguments: TestStore.all) func uniqueJobsAreKeptOnlyWhileTheirKeyHolds(store: TestStore) async throws {
        let queue = try await store.open()
        func unique(_ key: UniqueKey) throws -> JobRequest {
            try JobRequest(executor: "echo", payloadJSON: "{}", options: .init(queue: "u", unique: key))
        }
        let plain = try await queue.enqueue(try unique(UniqueKey("k1")))
        let keepsSucceeded = try await queue.enqueue(try unique(UniqueKey("k2", finishedStates: [.succeeded])))
        let keepsAnHour = try await queue.enqueue(try unique(UniqueKey("k3", for: .seconds(3600))))
        let claimed = try await queue.store.claim(
            queues: ["u"], limit: 10, workerID: "w", lease: .seconds(30), startingNow: 10)
        _ = try await queue.store.recordOutcomes(
            claimed.map { job in
                (job, job.id == keepsSucceeded.id ? .dead(error: "no", timedOut: false) : .succeeded(resultJSON: "{}"))
            }, starting: [], workerID: "w")
        try await queue.setRetention(QueueRetention(succeeded: .milliseconds(50), dead: .milliseconds(50)), for: "u")
        try await Task.sleep(for: .milliseconds(120))
        let report = try await queue.clean()
        #expect(report.jobs == 2 && report.keptForReferences == 1, "\(report)")
        #expect(try await queue.job(plain.id) == nil, "the default rule keeps no finished job's key")
        #expect(try await queue.job(keepsSucceeded.id) == nil, "it died, and its rule keeps only successes")
        #expect(try await queue.job(keepsAnHour.id)?.state == .succeeded, "within its hour")
        #expect(try await queue.clean().keptForReferences == 1)
    }

    /// Deleting one job (`jobq delete`, the dashboard) deletes its events the one way every
    /// deletion does: a follower behind them is told, and a job something waits on is refused.
    @Test(arguments: TestStore.all) func deletingAJobTellsFollowersAndKeepsReferences(store: TestStore) async throws {
        let queue = try await store.open()
        let deleted = try await queue.enqueue(try Self.request("q"))
        let needed = try await queue.enqueue(try Self.request("q"))
        _ = try await queue.enqueue(try Self.request("other", after: [needed.id]))
        try await Self.finish(queue, "q")
        try await queue.delete(deleted.id)
        #expect(try await queue.job(deleted.id) == nil)
        await #expect {
            _ = try await queue.events(after: 1)
        } throws: { error in
            if case JobQueueError.eventsDeleted = error { return true }
            return false
        }
        await #expect {
            try await queue.delete(needed.id)
        } throws: { error in
            guard case JobQueueError.invalidState(let message) = error else { return false }
            return message.contains("still referred to by unfinished work")
        }
        #expect(try await queue.job(needed.id)?.state == .succeeded)
    }

    /// The advice of a refused cursor works: with events of a queue kept briefly interleaved
    /// with those of a queue kept for ever, the cursor it names is accepted, and so is reading
    /// from the start.
    @Test(arguments: TestStore.all) func theAdviceForDeletedEventsIsACursorThatWorks(store: TestStore) async throws {
        let queue = try await store.open()
        for index in 0..<6 { _ = try await queue.enqueue(try Self.request(index.isMultiple(of: 2) ? "brief" : "kept")) }
        try await Self.finish(queue, "brief")
        try await Self.finish(queue, "kept")
        try await queue.setRetention(QueueRetention(succeeded: .milliseconds(50)), for: "brief")
        try await queue.setRetention(QueueRetention(succeeded: nil), for: "kept")
        try await Task.sleep(for: .milliseconds(120))
        #expect(try await queue.clean().jobs == 3)
        var advice = ""
        do {
            _ = try await queue.events(after: 1)
            Issue.record("a cursor before deleted events was accepted")
        } catch JobQueueError.eventsDeleted(let message) {
            advice = message
        }
        let cursor = try #require(
            advice.firstRange(of: /--since (\d+)/).map { Int64(advice[$0].dropFirst(8))! }, "\(advice)")
        let after = try await queue.events(after: cursor)
        #expect(!after.isEmpty && after.allSatisfy { $0.queue == "kept" }, "\(after.map(\.id))")
        let all = try await queue.events(after: 0)
        #expect(Set(all.map(\.queue)) == ["kept"], "from the start: only what is kept")
    }

    /// `jobq prune` deletes only what the cleaner would: a lane's halting job stays, so the lane
    /// can be resumed and a job appended after the prune runs.
    @Test(arguments: TestStore.all) func pruneKeepsWhatUnfinishedWorkRefersTo(store: TestStore) async throws {
        let queue = try await store.open()
        let first = try await queue.enqueue(
            try JobRequest(
                executor: "fail", payloadJSON: "{}", options: .init(maxAttempts: 1, lane: "L", laneOnFailure: .halt)))
        let plain = try await queue.enqueue(try Self.request("default"))
        try await work(queue, options: quickOptions(stopWhen: .queuesEmpty))
        #expect(try await queue.job(first.id)?.state == .dead)
        try await Task.sleep(for: .milliseconds(20))
        #expect(try await queue.prune(olderThan: .zero) == 1, "only the plain job")
        #expect(try await queue.job(plain.id) == nil)
        #expect(try await queue.job(first.id)?.state == .dead, "the lane's halting job stays")
        let appended = try await queue.enqueue(try Self.request("default", lane: "L"))
        try await queue.resumeLane("L")
        try await work(queue)
        #expect(try await queue.job(appended.id)?.state == .succeeded)
    }
}
