import Foundation
import Synchronization
import Testing

@testable import JobQCore
@testable import JobQSQL
@testable import JobQSQLite

/// Reports progress in a tight loop, then succeeds.
struct Chatty: Executor {
    static let name = "chatty"
    struct Input: Codable, Sendable { var reports: Int }
    func run(_ input: Input, context: JobContext) async throws -> Input {
        for index in 1...input.reports {
            try await context.progress(Double(index) / Double(input.reports), message: "step \(index)")
        }
        try await context.update(["done": input.reports])
        return input
    }
}

/// Snoozes `times` times, counting in its checkpoint, then returns the count.
struct Patient: Executor {
    static let name = "patient"
    struct Input: Codable, Sendable { var times: Int }
    func run(_ input: Input, context: JobContext) async throws -> Int {
        let seen = try context.checkpoint(as: Int.self) ?? 0
        if seen < input.times { throw try ContinueLater(checkpoint: seen + 1, after: .milliseconds(10)) }
        return seen
    }
}

struct Sleepy: Executor {
    static let name = "sleepy"
    static let timeout: Duration? = .milliseconds(100)
    func run(_ input: Int, context: JobContext) async throws -> Int {
        try await Task.sleep(for: .seconds(30))
        return input
    }
}

@Suite("Lifecycle events, progress, re-entry")
struct EventTests {
    static func kinds(_ queue: JobQueue, job: JobID) async throws -> [EventKind] {
        try await queue.events(after: 0, filter: EventFilter(jobIDs: [job])).map(\.kind)
    }

    @Test(arguments: TestStore.all) func everyTransitionWritesAnEvent(store: TestStore) async throws {
        let queue = try await store.open()
        let ok = try await queue.enqueue(SumExecutor.self, .init(a: 1, b: 2))
        let flaky = try await queue.enqueue(FailExecutor.self, .init(message: "no"), options: .init(maxAttempts: 2))
        let later = try await queue.enqueue(SumExecutor.self, .init(a: 1, b: 2), options: .init(delay: .seconds(60)))
        try await queue.cancel(later.id)
        try await queue.retry(later.id)
        try await queue.cancel(later.id)
        try await work(queue)

        #expect(try await Self.kinds(queue, job: ok.id) == [.enqueued, .started, .succeeded])
        #expect(try await Self.kinds(queue, job: flaky.id) == [.enqueued, .started, .failed, .started, .dead])
        #expect(try await Self.kinds(queue, job: later.id) == [.enqueued, .cancelled, .retried, .cancelled])
        let succeeded = try #require(
            try await queue.events(after: 0, filter: EventFilter(jobIDs: [ok.id], kinds: [.succeeded])).first)
        #expect(succeeded.dataJSON == #"{"attempt":1,"result":{"sum":3}}"#)
        #expect(succeeded.executor == "sum" && succeeded.queue == "default")
        struct Failed: Decodable {
            var error: String
            var willRetry: Bool
        }
        let failed = try #require(try await queue.events(after: 0, filter: EventFilter(kinds: [.failed])).first)
        #expect(try failed.data(as: Failed.self)?.willRetry == true)
    }

    @Test(arguments: TestStore.all) func timeoutsWriteTimedOutThenRetryThenDie(store: TestStore) async throws {
        let queue = try await store.open()
        let job = try await queue.enqueue(Sleepy.self, 1, options: .init(maxAttempts: 2))
        #expect(job.timeout == .milliseconds(100), "the executor's default timeout applies")
        try await work(queue, executors: [Sleepy()])
        #expect(
            try await Self.kinds(queue, job: job.id) == [.enqueued, .started, .timedOut, .started, .timedOut, .dead])
        #expect(try await queue.job(job.id)?.error == "timed out after 100ms (attempt 2 of 2)")
    }

    @Test(arguments: TestStore.all) func progressIsStoredThrottledAndSentAsEvents(store: TestStore) async throws {
        let queue = try await store.open()
        let job = try await queue.enqueue(Chatty.self, .init(reports: 20_000))
        try await work(queue, executors: [Chatty()])
        let done = try #require(try await queue.job(job.id))
        #expect(done.state == .succeeded)
        let progress = try await queue.events(after: 0, filter: EventFilter(jobIDs: [job.id], kinds: [.progress]))
        #expect(progress.count >= 1)
        #expect(progress.count < 40, "20,000 reports are throttled to a few writes per second, got \(progress.count)")
        #expect(done.updateJSON == #"{"done":20000}"#)
    }

    @Test(arguments: TestStore.all) func snoozeAndContinueLaterDoNotUseAttempts(store: TestStore) async throws {
        let queue = try await store.open()
        let job = try await queue.enqueue(Patient.self, .init(times: 5), options: .init(maxAttempts: 1))
        let stats = try await work(queue, executors: [Patient()])
        let done = try #require(try await queue.job(job.id))
        #expect(done.state == .succeeded)
        #expect(done.resultJSON == "5")
        #expect(done.attempt == 1)
        #expect(done.snoozes == 5)
        #expect(stats.snoozed == 5)
        #expect(try await Self.kinds(queue, job: job.id).filter { $0 == .snoozed }.count == 5)

        let capped = try await queue.enqueue(Patient.self, .init(times: 50))
        var options = quickOptions()
        options.maximumSnoozes = 3
        try await work(queue, executors: [Patient()], options: options)
        let dead = try #require(try await queue.job(capped.id))
        #expect(dead.state == .dead)
        #expect(dead.error?.contains("snoozed 3 times") == true)
    }

    @Test(arguments: TestStore.all) func subscriptionDeliversFilteredEventsAfterCommit(store: TestStore) async throws {
        let queue = try await store.open()
        let stream = queue.events(EventFilter(executor: "sum", kinds: [.succeeded]), since: 0)
        let collector = Task {
            var seen: [JobEvent] = []
            for try await event in stream {
                seen.append(event)
                if seen.count == 3 { break }
            }
            return seen
        }
        for index in 1...3 {
            try await queue.enqueue(SumExecutor.self, .init(a: index, b: 0))
            try await queue.enqueue(EchoExecutor.self, .string("noise"))
        }
        try await work(queue)
        let seen = try await within(.seconds(5), "three events") { try await collector.value }
        #expect(seen.map(\.kind) == [.succeeded, .succeeded, .succeeded])
        #expect(seen.allSatisfy { $0.executor == "sum" })
        #expect(seen.map(\.id) == seen.map(\.id).sorted())
    }

    /// Every filter field at once: each noise job misses exactly one of them, so a condition
    /// bound to the wrong parameter lets noise through or drops the match.
    @Test(arguments: TestStore.all) func everyFilterFieldAppliesAtOnce(store: TestStore) async throws {
        let queue = try await store.open()
        func sum(queue name: String = "reports", batch: String? = "nightly") throws -> JobRequest {
            try JobRequest(SumExecutor.self, .init(a: 1, b: 2), options: .init(queue: name, batch: batch))
        }
        _ = try await queue.createBatch("nightly")
        _ = try await queue.createBatch("weekly")
        let match = try await queue.enqueue(try sum())
        let otherQueue = try await queue.enqueue(try sum(queue: "default"))
        let otherBatch = try await queue.enqueue(try sum(batch: "weekly"))
        let otherExecutor = try await queue.enqueue(
            try JobRequest(EchoExecutor.self, .string("noise"), options: .init(queue: "reports", batch: "nightly")))
        let notListed = try await queue.enqueue(try sum())
        try await work(queue, queues: ["reports", "default"])
        let filter = EventFilter(
            jobIDs: [match.id, otherQueue.id, otherBatch.id, otherExecutor.id], executor: "sum", queue: "reports",
            batch: "nightly",
            kinds: [.succeeded])
        let events = try await queue.events(after: 0, filter: filter)
        #expect(events.map(\.jobID) == [match.id])
        #expect(events.map(\.kind) == [.succeeded])
        // Without the id list, the job left out of it matches too; without kinds, every event of both.
        let unlisted = EventFilter(executor: "sum", queue: "reports", batch: "nightly", kinds: [.succeeded])
        // (In the order the jobs finished, which a pool of four does not fix.)
        #expect(try await Set(queue.events(after: 0, filter: unlisted).map(\.jobID)) == [match.id, notListed.id])
        let allKinds = EventFilter(jobIDs: [match.id], executor: "sum", queue: "reports", batch: "nightly")
        #expect(try await queue.events(after: 0, filter: allKinds).map(\.kind) == [.enqueued, .started, .succeeded])
    }

    /// A job claimed ahead (its start written by the worker's batcher, not by the claim) still
    /// has its `started` event before its progress: the first progress write waits for the start.
    @Test(arguments: TestStore.all) func progressOfJobsClaimedAheadComesAfterTheirStart(store: TestStore) async throws {
        let queue = try await store.open()
        let jobs = try await queue.enqueue(
            contentsOf: try (0..<6).map { _ in try JobRequest(Chatty.self, .init(reports: 2)) })
        try await work(queue, executors: [Chatty()], concurrency: 1)
        for job in jobs {
            let kinds = try await queue.events(after: 0, filter: EventFilter(jobIDs: [job.id])).map(\.kind)
            #expect(kinds.first == .enqueued && kinds.dropFirst().first == .started, "job \(job.id): \(kinds)")
            #expect(kinds.last == .succeeded && kinds.filter { $0 == .progress }.count >= 1, "job \(job.id): \(kinds)")
        }
    }

    @Test(arguments: TestStore.all) func handlersFireForStartProgressAndFinish(store: TestStore) async throws {
        let queue = try await store.open()
        let log = RunLog()
        let finished = Mutex<JobFinish?>(nil)
        let job = try await queue.enqueue(
            Chatty.self, .init(reports: 3),
            handlers: JobHandlers(
                onStart: { _ in log.append("start") },
                onUpdate: { _ in log.append("update") },
                onFinish: { finish in
                    finished.withLock { $0 = finish }
                    log.append("finish")
                }))
        let failing = try await queue.enqueue(
            JobRequest(executor: "fail", payloadJSON: #"{"message":"nope"}"#, options: .init(maxAttempts: 1)),
            handlers: JobHandlers(onFinish: { finish in
                log.append("finish \(finish.state.rawValue) \(finish.error ?? "")")
            }))
        try await work(queue, executors: [Chatty(), FailExecutor()])
        try await eventually(.seconds(5), "both handlers to finish") {
            log.all.filter { $0.hasPrefix("finish") }.count == 2
        }
        // Each job's handlers see its events in order; the two jobs' feeds are independent, so
        // the failing job's finish may come before the other's start.
        #expect(log.all.filter { !$0.hasPrefix("finish dead") }.first == "start")
        #expect(log.all.contains("update"))
        #expect(log.all.contains("finish dead nope"))
        let finish = try #require(finished.withLock { $0 })
        #expect(finish.jobID == job.id && finish.state == .succeeded)
        #expect(try finish.result(as: Chatty.Input.self)?.reports == 3)
        _ = failing
    }

    @Test(arguments: TestStore.all) func pruneRemovesEventsWithTheirJobs(store: TestStore) async throws {
        let queue = try await store.open()
        let job = try await queue.enqueue(SumExecutor.self, .init(a: 1, b: 1))
        try await work(queue)
        #expect(try await queue.events(after: 0, filter: EventFilter(jobIDs: [job.id])).count == 3)
        try await queue.prune(olderThan: .zero)
        #expect(try await queue.events(after: 0).isEmpty)
    }
}
