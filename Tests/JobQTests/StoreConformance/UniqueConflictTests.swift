import Foundation
import Testing

@testable import JobQCore
@testable import JobQSQL

/// What an enqueue does to the job holding its unique key, on every store: keep it, replace its
/// payload, or debounce it (its run time pushed out, bounded by a longest wait); never a job that
/// has started.
@Suite("Unique keys: replace and debounce")
struct UniqueConflictTests {
    static func request(_ a: Int, key: UniqueKey, priority: Int = 0) throws -> JobRequest {
        try JobRequest(Sum.self, .init(a: a, b: 0), options: .init(priority: priority, unique: key))
    }

    @Test(arguments: TestStore.all)
    func replaceGivesAPendingHolderTheNewPayload(store: TestStore) async throws {
        let queue = try await store.open()
        let key = UniqueKey("report", onConflict: .replace)
        let first = try await queue.enqueue(try Self.request(1, key: key))
        let second = try await queue.enqueueReportingDuplicates(contentsOf: [try Self.request(2, key: key, priority: 5)]
        )[0]
        #expect(second.existed && second.job.id == first.id)
        #expect(second.job.payloadJSON.contains(#""a":2"#) && second.job.priority == 5)
        let kept = try await queue.enqueueReportingDuplicates(
            contentsOf: [try Self.request(3, key: UniqueKey("report"))])[0]
        #expect(kept.existed && kept.job.payloadJSON.contains(#""a":2"#), "keep leaves it as it is")
        #expect(try await queue.jobs().count == 1)
        let updates = try await queue.events(after: 0).filter { $0.kind == .updated }
        #expect(updates.count == 1 && updates[0].jobID == first.id)
        try await WorkerPool(queue: queue, executors: [Sum()], options: quickOptions()).run()
        #expect(try await queue.job(first.id)?.resultJSON == #"{"sum":2}"#)
    }

    @Test(arguments: TestStore.all)
    func debouncePushesTheRunTimeOutButNotPastTheLongestWait(store: TestStore) async throws {
        let queue = try await store.open()
        let key = UniqueKey("save", onConflict: .debounce(quiet: .seconds(60), longest: .seconds(90)))
        let first = try await queue.enqueue(try Self.request(1, key: key))
        #expect(first.state == .ready, "the first enqueue is not debounced")
        let second = try await queue.enqueue(try Self.request(2, key: key))
        #expect(second.id == first.id && second.state == .scheduled)
        let pushed = second.runAt.timeIntervalSince(first.createdAt)
        #expect(pushed > 59 && pushed < 61, "\(pushed)")
        try await Task.sleep(for: .milliseconds(50))
        let third = try await queue.enqueue(try Self.request(3, key: key))
        #expect(third.runAt > second.runAt && third.payloadJSON.contains(#""a":3"#))
        // Never past created + longest, however often it is enqueued.
        let bounded = UniqueKey("save", onConflict: .debounce(quiet: .seconds(60), longest: .seconds(61)))
        for a in 4...6 { _ = try await queue.enqueue(try Self.request(a, key: bounded)) }
        let last = try #require(try await queue.job(first.id))
        #expect(last.runAt.timeIntervalSince(first.createdAt) <= 90.001)
        #expect(try await queue.jobs().count == 1)
    }

    @Test(arguments: TestStore.all)
    func aStartedHolderIsNeverChanged(store: TestStore) async throws {
        let queue = try await store.open()
        let key = UniqueKey("slow", onConflict: .replace)
        let first = try await queue.enqueue(
            try JobRequest(executor: "sleep", payloadJSON: #"{"seconds":3}"#, options: .init(unique: key)))
        let pool = WorkerPool(queue: queue, executors: BuiltinExecutors.all, options: quickOptions())
        let running = Task { try await pool.run() }
        // Running for 3 s: long enough to be seen running on a loaded machine.
        try await eventually(.seconds(30), "the holder to run") { try await queue.job(first.id)?.state == .running }
        let again = try await queue.enqueueReportingDuplicates(
            contentsOf: [try JobRequest(executor: "sleep", payloadJSON: #"{"seconds":0}"#, options: .init(unique: key))]
        )[0]
        #expect(again.existed && again.job.id == first.id && again.job.payloadJSON.contains(#""seconds":3"#))
        try await running.value
        #expect(try await queue.events(after: 0).filter { $0.kind == .updated }.isEmpty)
    }

    @Test(arguments: TestStore.all)
    func aBadDebounceIsRefused(store: TestStore) async throws {
        let queue = try await store.open()
        for rule in [
            UniqueConflict.debounce(quiet: .zero, longest: .seconds(1)),
            .debounce(quiet: .seconds(2), longest: .seconds(1))
        ] {
            await #expect(throws: JobQueueError.self) {
                try await queue.enqueue(try Self.request(1, key: UniqueKey("k", onConflict: rule)))
            }
        }
        #expect(try await queue.jobs().isEmpty)
    }

    /// A replace or a debounce of a key held by a job of another executor or queue is refused
    /// and changes nothing (it once turned a `sum` job in `billing` into the new job).
    @Test(arguments: TestStore.all)
    func aKeyHeldByAnotherKindOfJobIsNeitherReplacedNorDebounced(store: TestStore) async throws {
        let queue = try await store.open()
        let holder = try await queue.enqueue(
            try JobRequest(
                Sum.self, .init(a: 1, b: 1), options: .init(queue: "billing", unique: UniqueKey("doc-7"))))
        for rule in [UniqueConflict.replace, .debounce(quiet: .seconds(30), longest: .seconds(60))] {
            for (executor, queueName) in [("echo", "billing"), (Sum.name, "default")] {
                await #expect {
                    _ = try await queue.enqueue(
                        try JobRequest(
                            executor: executor, payloadJSON: #"{"a":9,"b":9}"#,
                            options: .init(queue: queueName, unique: UniqueKey("doc-7", onConflict: rule))))
                } throws: { error in
                    guard case JobQueueError.invalidInput(let message) = error else { return false }
                    return message.contains("held by job \(holder.id)")
                        && message.contains("nothing was enqueued or changed")
                }
            }
        }
        let after = try #require(try await queue.job(holder.id))
        #expect(after.executor == Sum.name && after.queue == "billing" && after.payloadJSON == holder.payloadJSON)
        #expect(after.runAt == holder.runAt)
        #expect(try await queue.jobs().count == 1)
        #expect(try await queue.events(after: 0).filter { $0.kind == .updated }.isEmpty)
    }

    /// A debounce that puts a job off moves its deadline to start by as much: it runs, it does
    /// not expire unrun (`--debounce 30s --delay 5s --expire-after 10s` once ended it `cancelled`).
    @Test(arguments: TestStore.all)
    func aDebounceMovesTheDeadlineWithTheRunTime(store: TestStore) async throws {
        let queue = try await store.open()
        let key = UniqueKey("doc-7", onConflict: .debounce(quiet: .seconds(30), longest: .seconds(300)))
        let now = Date()
        let first = try await queue.enqueue(
            try JobRequest(
                Sum.self, .init(a: 1, b: 1),
                options: .init(runAt: now.addingTimeInterval(5), unique: key, expiresAt: now.addingTimeInterval(10))))
        let second = try await queue.enqueueReportingDuplicates(
            contentsOf: [
                try JobRequest(
                    Sum.self, .init(a: 2, b: 2),
                    options: .init(runAt: now.addingTimeInterval(5), unique: key, expiresAt: now.addingTimeInterval(10))
                )
            ])[0]
        #expect(second.existed && second.job.id == first.id)
        let moved = try #require(second.job.expiresAt).timeIntervalSince1970
        let runAt = second.job.runAt.timeIntervalSince1970
        #expect(runAt > now.timeIntervalSince1970 + 29, "put off by the quiet period")
        #expect(abs((moved - runAt) - 5) < 0.01, "the job keeps its 5 s to start: \(moved - runAt)")
        _ = try await queue.store.expireOverdueJobs(skipping: [])
        #expect(try await queue.job(first.id)?.state == .scheduled, "not expired before its new run time")
    }
}
