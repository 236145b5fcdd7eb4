import Foundation
import JobQ
import Logging
import Testing

@testable import JobQCore

/// One bad row, one bad value or one failing queue ends or skips what it concerns, and the
/// rest of the work goes on, on every store.
@Suite("Isolation: the bad one never stalls the rest")
struct IsolationTests {
    /// Makes job `id`'s payload unreadable by the partitioned claim, bypassing every check at
    /// enqueue, as a row written by an older jobq or by hand would be: SQLite's JSON functions
    /// fail on text that is not JSON, PostgreSQL's `#>>` on an escaped NUL.
    static func makeUnreadable(_ queue: JobQueue, _ id: JobID, store: TestStore) async throws {
        try await rawWrite(queue) { db in
            switch store {
            case .sqlite:
                try db.execute(sql: "PRAGMA ignore_check_constraints = ON")
                try db.execute(sql: "UPDATE jobs SET payload = ? WHERE id = ?", arguments: [#"{"customer":"#, id])
                try db.execute(sql: "PRAGMA ignore_check_constraints = OFF")
            case .postgres:
                try db.execute(
                    sql: "UPDATE jobs SET payload = ? WHERE id = ?", arguments: [#"{"customer":"a\u0000b"}"#, id])
            }
        }
    }

    static func rawWrite(_ queue: JobQueue, _ body: @escaping @Sendable (any SQLTransaction) throws -> Void)
        async throws
    {
        func write(_ store: some SQLStore) async throws {
            try await store.write(.short, audience: .nobody) { db in try body(db) }
        }
        let store: any SQLStore = try #require(queue.store as? any SQLStore)
        try await write(store)
    }

    /// A queue partitioned by a payload member, holding one job whose payload the claim cannot
    /// read, beside a healthy queue with one job.
    static func poisonedStore(_ store: TestStore) async throws -> (JobQueue, healthy: JobID, poison: JobID) {
        let queue = try await store.open()
        try await queue.setLimits(
            QueueLimits(concurrency: 2, partitionBy: .payload("/customer")), for: "poisonq")
        let poison = try await queue.enqueue(
            try JobRequest(executor: "echo", payloadJSON: #"{"customer":"a"}"#, options: .init(queue: "poisonq")))
        try await makeUnreadable(queue, poison.id, store: store)
        let healthy = try await queue.enqueue(
            try JobRequest(executor: "echo", payloadJSON: #"{"customer":"b"}"#, options: .init(queue: "otherq")))
        return (queue, healthy.id, poison.id)
    }

    /// A claim over several queues that fails on a later one hands over the jobs it already
    /// committed for earlier ones (PostgreSQL commits queue by queue) instead of dropping them:
    /// no job is left running that the caller did not get.
    @Test(arguments: TestStore.all) func aClaimThatFailsOnOneQueueHandsOverWhatItClaimed(store: TestStore)
        async throws
    {
        let (queue, healthy, _) = try await Self.poisonedStore(store)
        do {
            let claimed = try await queue.store.claim(
                queues: ["otherq", "poisonq"], limit: 10, workerID: "w", lease: .seconds(30), startingNow: 10)
            Issue.record("the claim of the poisoned queue did not fail: \(claimed.map(\.id))")
        } catch let failure as QueueClaimFailure {
            #expect(failure.queue == "poisonq", "\(failure)")
            let running = try await queue.jobs(matching: JobQuery(state: .running)).map(\.id)
            #expect(Set(running) == Set(failure.claimed.map(\.id)), "running: \(running), handed over: \(failure)")
            let job = try #require(try await queue.job(healthy))
            #expect(job.state == (failure.claimed.isEmpty ? .ready : .running))
        }
    }

    /// A pool on a healthy queue and one whose claim keeps failing runs the healthy queue's
    /// jobs at once, whichever queue comes first, and backs off the failing one (a few logged
    /// failures, not one per poll).
    @Test(arguments: TestStore.all) func aFailingQueueCostsTheOtherQueuesNothing(store: TestStore) async throws {
        for order in [["poisonq", "otherq"], ["otherq", "poisonq"]] {
            let (queue, healthy, poison) = try await Self.poisonedStore(store)
            let log = LogRecorder()
            let pool = WorkerPool(
                queue: queue, queues: order, executors: BuiltinExecutors.all,
                options: quickOptions(stopWhen: .never), logger: Logger(label: "test") { _ in log })
            let running = Task { try await pool.run() }
            defer { running.cancel() }
            try await eventually(.seconds(10), "the healthy job to succeed (queues \(order))") {
                try await queue.job(healthy)?.state == .succeeded
            }
            #expect(try await queue.job(healthy)?.attempt == 1)
            // A second healthy job, enqueued while the other queue keeps failing, runs as quickly.
            let later = try await queue.enqueue(
                try JobRequest(executor: "echo", payloadJSON: "{}", options: .init(queue: "otherq")))
            try await eventually(.seconds(5), "a later healthy job to succeed") {
                try await queue.job(later.id)?.state == .succeeded
            }
            try await Task.sleep(for: .milliseconds(1500))
            let failures = log.messages.filter { $0.contains("claims from queue 'poisonq' wait") }
            #expect(!failures.isEmpty && failures.count <= 4, "\(failures.count) logged failures: \(failures)")
            #expect(try await queue.job(poison)?.state == .ready, "the unreadable job is left for the operator")
            running.cancel()
            _ = try await within(.seconds(20), "the pool to stop") { try? await running.value }
        }
    }
}
