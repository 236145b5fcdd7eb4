import Foundation
import Testing

@testable import JobQCore
@testable import JobQSQL

/// The history (``History``): what workers ran, by minute, queue and executor, with their wait
/// and run times; cancellations from the jobs kept; the backlog sampled by one worker; old
/// minutes cleaned with the events.
@Suite("History of outcomes, times and backlog")
struct HistoryTests {
    @Test(arguments: TestStore.all) func workersAddWhatTheyRanByOutcomeWithTheirTimes(store: TestStore) async throws {
        let queue = try await store.open()
        for index in 0..<5 {
            _ = try await queue.enqueue(try JobRequest(executor: "sum", payloadJSON: #"{"a": \#(index), "b": 1}"#))
        }
        for _ in 0..<2 {
            _ = try await queue.enqueue(
                try JobRequest(executor: "fail", payloadJSON: #"{"message": "no"}"#, options: .init(maxAttempts: 2)))
        }
        let cancelled = try await queue.enqueue(
            try JobRequest(executor: "sum", payloadJSON: #"{"a": 1, "b": 1}"#, options: .init(queue: "later")))
        try await queue.cancel(cancelled.id)
        _ = try await work(queue)

        let history = try await queue.history(over: .seconds(3600))
        #expect(history.buckets.count == 60)
        let total = history.buckets.reduce(into: History.Bucket(start: history.start)) { sum, bucket in
            sum.succeeded += bucket.succeeded
            sum.retried += bucket.retried
            sum.dead += bucket.dead
            sum.cancelled += bucket.cancelled
        }
        #expect(total.succeeded == 5 && total.retried == 2 && total.dead == 2, "\(total)")
        #expect(total.cancelled == 1, "the cancellation, from the jobs kept")
        let ran = try #require(history.buckets.last { $0.succeeded > 0 })
        #expect(ran.waitP50 != nil && ran.runP95 != nil && (ran.runMax ?? -1) >= 0)
        #expect((ran.waitMax ?? 0) < 60, "waits measured from the run time, in seconds")

        // One executor's history: its own outcomes, no cancellations nor backlog.
        let failing = try await queue.history(over: .seconds(3600), executor: "fail")
        #expect(failing.buckets.map(\.succeeded).reduce(0, +) == 0)
        #expect(failing.buckets.map(\.dead).reduce(0, +) == 2)
        #expect(failing.buckets.map(\.cancelled).reduce(0, +) == 0)
        let json = try #require(
            try JSONSerialization.jsonObject(with: Data(failing.json.utf8)) as? [String: Any])
        #expect(json["executor"] as? String == "fail" && (json["buckets"] as? [Any])?.count == 60)
    }

    @Test(arguments: TestStore.all) func additionsOfOneMinuteAddUpAndTheBacklogIsSampledByState(store: TestStore)
        async throws
    {
        let queue = try await store.open()
        let minute = Int64((Date().timeIntervalSince1970 / 60).rounded(.down))
        let recorder = HistoryRecorder()
        recorder.ran(queue: "q", executor: "e", waited: 0.004, ran: 0.5)
        recorder.ended(queue: "q", executor: "e", outcome: .succeeded(resultJSON: "{}"))
        let first = recorder.take()
        recorder.ran(queue: "q", executor: "e", waited: 2, ran: 0.25)
        recorder.ended(queue: "q", executor: "e", outcome: .dead(error: "x", timedOut: false))
        let refused = recorder.take()
        #expect(refused.count == 1)
        // A store's refusal puts the minutes back as they were, neither lost nor doubled.
        recorder.putBack(refused)
        #expect(recorder.take() == refused)
        // Two workers' additions of the same minute meet in one row.
        try await queue.store.addHistory(first)
        var second = HistoryMinute(minute: minute, queue: "q", executor: "e")
        second.dead = 1
        second.waits.add(seconds: 2)
        second.waitMax = 2
        try await queue.store.addHistory([second])
        let rows = try await queue.storedRows("SELECT succeeded, dead, wait_max FROM jobq_history")
        #expect(rows.count == 1 && rows[0].int(0) == 1 && rows[0].int(1) == 1 && rows[0].double(2) == 2)

        for _ in 0..<3 { _ = try await queue.enqueue(try JobRequest(executor: "sum", payloadJSON: "{}")) }
        _ = try await queue.enqueue(
            try JobRequest(executor: "sum", payloadJSON: "{}", options: .init(runAt: Date().addingTimeInterval(3600))))
        try await queue.store.sampleBacklog(minute: minute)
        let history = try await queue.history(over: .seconds(3600), queue: nil)
        let last = try #require(history.buckets.last { !$0.backlog.isEmpty })
        #expect(last.backlog[.ready] == 3 && last.backlog[.scheduled] == 1, "\(last.backlog)")
        #expect(last.waitMax == 2 && last.dead == 1 && last.succeeded == 1)
        let p50 = try #require(last.waitP50)
        #expect(p50 >= 0.004 && p50 <= 0.004 * 1.2, "a percentile within the histogram's 19%: \(p50)")
    }

    /// Workers on connections of their own add the same rows at once, each in its own order (a recorder's minutes come out
    /// of a dictionary): every addition lands, none is refused as a deadlock (a CI run's
    /// PostgreSQL refused one when two workers stopped together), and the counts add up.
    @Test(arguments: TestStore.all) func workersAddingTheSameRowsAtOnceAllLand(store: TestStore) async throws {
        let location = try await store.location()
        var workers: [JobQueue] = []
        for _ in 0..<4 { workers.append(try await store.open(at: location)) }
        let queue = workers[0]
        let now = Int64((Date().timeIntervalSince1970 / 60).rounded(.down))
        var minutes: [HistoryMinute] = []
        for offset in 0..<4 {
            for executor in ["a", "b"] {
                var minute = HistoryMinute(minute: now - Int64(offset), queue: "q", executor: executor)
                minute.succeeded = 1
                minutes.append(minute)
            }
        }
        let rounds = 25
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (index, worker) in workers.enumerated() {
                let mine = index % 2 == 0 ? minutes : minutes.reversed()
                group.addTask {
                    for _ in 0..<rounds { try await worker.store.addHistory(mine) }
                }
            }
            try await group.waitForAll()
        }
        let rows = try await queue.storedRows("SELECT succeeded FROM jobq_history ORDER BY minute, executor")
        #expect(rows.count == minutes.count)
        #expect(rows.allSatisfy { $0.int(0) == 4 * rounds }, "\(rows.map { $0.int(0) })")
    }

    @Test(arguments: TestStore.all) func oldMinutesGoWithTheEventsAndBadWindowsAreRefused(store: TestStore) async throws
    {
        let queue = try await store.open()
        let now = Int64((Date().timeIntervalSince1970 / 60).rounded(.down))
        var old = HistoryMinute(minute: now - 40 * 1440, queue: "q", executor: "e")
        old.succeeded = 1
        var recent = HistoryMinute(minute: now, queue: "q", executor: "e")
        recent.succeeded = 1
        try await queue.store.addHistory([old, recent])
        _ = try await queue.clean()
        let minutes = try await queue.storedRows("SELECT minute FROM jobq_history")
        #expect(minutes.map { $0.int64(0) } == [now], "the minute past the events' retention (30 days) is gone")
        await #expect(throws: JobQueueError.self) { try await queue.history(over: .seconds(30)) }
        await #expect(throws: JobQueueError.self) { try await queue.history(over: .seconds(3600), buckets: 120) }
        await #expect(throws: JobQueueError.self) { try await queue.history(over: .seconds(40 * 86_400)) }
    }
}
