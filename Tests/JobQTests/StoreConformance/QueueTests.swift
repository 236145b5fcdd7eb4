import Foundation
import Synchronization
import Testing

@testable import JobQCore
@testable import JobQSQL
@testable import JobQSQLite

/// Records the order in which jobs ran.
final class RunLog: Sendable {
    let entries = Mutex<[String]>([])
    func append(_ entry: String) { entries.withLock { $0.append(entry) } }
    var all: [String] { entries.withLock { $0 } }
}

struct Record: Executor {
    static let name = "record"
    struct Input: Codable, Sendable { var label: String }
    let log: RunLog
    func run(_ input: Input, context: JobContext) async throws -> Input {
        log.append(input.label)
        return input
    }
}

@Suite("Enqueueing, claim order, retries, and operator actions")
struct QueueTests {
    @Test(arguments: TestStore.all) func bulkEnqueueIsOneTransaction(store: TestStore) async throws {
        let queue = try await store.open()
        let requests = try (1...1000).map { try JobRequest(SumExecutor.self, .init(a: $0, b: 1)) }
        let jobs = try await queue.enqueue(contentsOf: requests)
        #expect(jobs.count == 1000)
        #expect(jobs.map(\.id) == Array(jobs[0].id...jobs[0].id + 999))

        var bad = try JobRequest(SumExecutor.self, .init(a: 1, b: 1))
        bad.options.maxAttempts = 0
        let good = try JobRequest(SumExecutor.self, .init(a: 1, b: 1))
        await #expect(throws: JobQueueError.self) { try await queue.enqueue(contentsOf: [good, bad, good]) }
        #expect(try await queue.jobs(limit: 5000).count == 1000, "a failed bulk enqueue stores nothing")
        try await work(queue)
        #expect(try await queue.jobs(state: .succeeded, limit: 5000).count == 1000)
    }

    /// A batch and a single job keep every field as given, in the given order, with their
    /// `enqueued` events: payloads with quotes, backslashes, braces, commas, the word NULL and
    /// non-ASCII text (PostgreSQL sends a batch's columns as array literals), names and no names,
    /// a time to run in the future (scheduled) and now (ready).
    @Test(arguments: TestStore.all) func enqueuedJobsKeepEveryFieldAndTheirEvents(store: TestStore) async throws {
        let queue = try await store.open()
        let awkward = #"{"s": "a\"b\\c,{}NULL é 😀 ", "n": null, "list": [1, "}"]}"#
        let minified = #"{"s":"a\"b\\c,{}NULL é 😀 ","n":null,"list":[1,"}"]}"#
        let later = Date().addingTimeInterval(3_600)
        var requests: [JobRequest] = []
        for index in 0..<5 {
            var options = JobOptions(queue: index % 2 == 0 ? "even" : "odd")
            options.priority = index - 2
            options.maxAttempts = index + 1
            options.name = index == 3 ? nil : #"name "\#(index)", NULL"#
            options.timeout = index == 1 ? .seconds(90) : nil
            options.runAt = index == 4 ? later : nil
            requests.append(try JobRequest(executor: "exec\(index)", payloadJSON: awkward, options: options))
        }
        let cursor = try await queue.latestEventID()
        let batch = try await queue.enqueue(contentsOf: requests)
        let single = try await queue.enqueue(requests[1])
        for (job, request) in zip(batch + [single], requests + [requests[1]]) {
            let stored = try #require(try await queue.job(job.id))
            #expect(stored == job)
            #expect(stored.payloadJSON == minified)
            #expect(stored.executor == request.executor && stored.queue == request.options.queue)
            #expect(stored.priority == request.options.priority && stored.maxAttempts == request.options.maxAttempts)
            #expect(stored.name == request.options.name && stored.timeout == request.options.timeout)
            #expect(stored.state == (request.options.runAt == nil ? .ready : .scheduled))
        }
        #expect(abs(batch[4].runAt.timeIntervalSince(later)) < 0.001)
        let events = try await queue.events(after: cursor, filter: EventFilter(kinds: [.enqueued]))
        #expect(events.map(\.jobID) == (batch + [single]).map(\.id))
        struct Enqueued: Decodable, Equatable {
            var state: String
            var priority: Int
        }
        #expect(
            try events.map { try $0.data(as: Enqueued.self) }
                == (requests + [requests[1]]).map {
                    Enqueued(state: $0.options.runAt == nil ? "ready" : "scheduled", priority: $0.options.priority)
                })
    }

    @Test(arguments: TestStore.all) func higherPriorityRunsFirstThenOlder(store: TestStore) async throws {
        let queue = try await store.open()
        let log = RunLog()
        for (label, priority) in [
            ("low-1", 0), ("high-1", 10), ("mid", 5), ("high-2", 10), ("low-2", 0), ("negative", -3)
        ] {
            try await queue.enqueue(Record.self, .init(label: label), options: .init(priority: priority))
        }
        try await work(queue, executors: [Record(log: log)], concurrency: 1)
        #expect(log.all == ["high-1", "high-2", "mid", "low-1", "low-2", "negative"])
    }

    @Test(arguments: TestStore.all) func delayedJobsWaitForTheirTime(store: TestStore) async throws {
        let queue = try await store.open()
        let now = try await queue.enqueue(SumExecutor.self, .init(a: 1, b: 1))
        let delayed = try await queue.enqueue(
            SumExecutor.self, .init(a: 2, b: 2), options: .init(priority: 100, delay: .seconds(60)))
        #expect(delayed.state == .scheduled)
        // A higher priority does not let a job that is not due yet be claimed.
        let claimed = try await queue.store.claim(queues: ["default"], limit: 10, workerID: "w", lease: .seconds(30))
        #expect(claimed.map(\.id) == [now.id])
        try await queue.store.recordOutcomes([(claimed[0], .succeeded(resultJSON: "{}"))], workerID: "w")
        try await queue.cancel(delayed.id)

        let soon = try await queue.enqueue(
            SumExecutor.self, .init(a: 3, b: 3), options: .init(delay: .milliseconds(300)))
        try await work(queue, queues: ["default"])
        let done = try #require(try await queue.job(soon.id))
        #expect(done.state == .succeeded)
        #expect(done.startedAt! >= soon.runAt, "never before its time")
    }

    @Test(arguments: TestStore.all) func queuesEmptyStopsWithoutWaitingForDelayedJobs(store: TestStore) async throws {
        let queue = try await store.open()
        try await queue.enqueue(SumExecutor.self, .init(a: 1, b: 1))
        let later = try await queue.enqueue(SumExecutor.self, .init(a: 1, b: 1), options: .init(delay: .seconds(60)))
        let stats = try await work(queue, options: quickOptions(stopWhen: .queuesEmpty), limit: .seconds(20))
        #expect(stats.succeeded == 1)
        #expect(try await queue.job(later.id)?.state == .scheduled)
    }

    @Test(arguments: TestStore.all) func maximumJobsStopsThePoolAfterThatManyJobs(store: TestStore) async throws {
        let queue = try await store.open()
        try await queue.enqueue(contentsOf: (0..<50).map { try JobRequest(SumExecutor.self, .init(a: $0, b: 0)) })
        var options = quickOptions(stopWhen: .never)
        options.maximumJobs = 20
        options.prefetch = 5
        let stats = try await work(queue, concurrency: 2, options: options, limit: .seconds(60))
        #expect(stats.succeeded == 20, "runs exactly 20, got \(stats.succeeded)")
        #expect(try await queue.jobs(state: .running).isEmpty, "prefetched jobs went back to ready")
        #expect(try await queue.jobs(state: .ready, limit: 100).count == 50 - stats.succeeded)
    }

    @Test(arguments: TestStore.all) func retriesBackOffExponentiallyThenDie(store: TestStore) async throws {
        let queue = try await store.open()
        let job = try await queue.enqueue(FailExecutor.self, .init(message: "nope"), options: .init(maxAttempts: 4))
        var options = quickOptions()
        options.retryBackoff = RetryBackoff(base: .milliseconds(100), maximum: .seconds(10), jitter: 0)
        let start = ContinuousClock.now
        try await work(queue, options: options)
        // Waits of 100 + 200 + 400 ms between four attempts.
        #expect(ContinuousClock.now - start >= .milliseconds(700))
        let dead = try #require(try await queue.job(job.id))
        #expect(dead.state == .dead)
        #expect(dead.attempt == 4)
    }

    @Test(arguments: TestStore.all) func flakyJobSucceedsOnRetry(store: TestStore) async throws {
        let queue = try await store.open()
        let job = try await queue.enqueue(FailExecutor.self, .init(message: "flaky", succeedFromAttempt: 2))
        try await work(queue)
        let done = try #require(try await queue.job(job.id))
        #expect(done.state == .succeeded)
        #expect(done.attempt == 2)
        #expect(done.error == nil)
    }

    @Test(arguments: TestStore.all) func retryBringsADeadJobBack(store: TestStore) async throws {
        let queue = try await store.open()
        let job = try await queue.enqueue(
            FailExecutor.self, .init(message: "until 3", succeedFromAttempt: 3), options: .init(maxAttempts: 2))
        try await work(queue)
        #expect(try await queue.job(job.id)?.state == .dead)

        let revived = try await queue.retry(job.id)
        #expect(revived.state == .ready)
        #expect(revived.maxAttempts == 3)
        try await work(queue)
        let done = try #require(try await queue.job(job.id))
        #expect(done.state == .succeeded)
        #expect(done.attempt == 3)

        await #expect(throws: JobQueueError.self) { try await queue.retry(job.id) }
        await #expect(throws: JobQueueError.notFound("no job with id 999; list jobs with `jobq list`")) {
            try await queue.retry(999)
        }
    }

    @Test(arguments: TestStore.all) func unknownExecutorFailsWithANameAndTheWorkerGoesOn(store: TestStore) async throws
    {
        let queue = try await store.open()
        let unknown = try await queue.enqueue(
            JobRequest(executor: "resize-image", payloadJSON: "{}", options: .init(maxAttempts: 1)))
        let known = try await queue.enqueue(SumExecutor.self, .init(a: 1, b: 2))
        try await work(queue, executors: [SumExecutor(), EchoExecutor()])
        let dead = try #require(try await queue.job(unknown.id))
        #expect(dead.state == .dead)
        #expect(dead.error?.contains("no executor named 'resize-image'") == true)
        #expect(dead.error?.contains("registered: echo, sum") == true)
        #expect(try await queue.job(known.id)?.state == .succeeded)
    }

    @Test(arguments: TestStore.all) func malformedPayloadIsNotRetried(store: TestStore) async throws {
        let queue = try await store.open()
        let job = try await queue.enqueue(
            JobRequest(executor: "sum", payloadJSON: #"{"a": 1}"#, options: .init(maxAttempts: 5)))
        let wrongType = try await queue.enqueue(JobRequest(executor: "sleep", payloadJSON: #"{"seconds": "soon"}"#))
        try await work(queue)
        let dead = try #require(try await queue.job(job.id))
        #expect(dead.state == .dead)
        #expect(dead.attempt == 1)
        #expect(dead.error == "payload does not match the input of 'sum': missing key 'b'")
        let wrong = try #require(try await queue.job(wrongType.id))
        #expect(wrong.state == .dead)
        #expect(wrong.error?.contains("'seconds'") == true)
    }

    @Test(arguments: TestStore.all) func payloadIsStoredMinifiedWithItsKeyOrder(store: TestStore) async throws {
        let queue = try await store.open()
        let job = try await queue.enqueue(JobRequest(executor: "echo", payloadJSON: "{ \"z\": 1,\n  \"a\": [1, 2] }"))
        #expect(job.payloadJSON == #"{"z":1,"a":[1,2]}"#)
    }

    @Test(arguments: TestStore.all) func pausedQueueIsNotClaimedUntilResumed(store: TestStore) async throws {
        let queue = try await store.open()
        try await queue.pause(queue: "default")
        let job = try await queue.enqueue(SumExecutor.self, .init(a: 1, b: 1))
        // The limit catches a pool that never stops; a loaded machine may take seconds.
        let stats = try await work(queue, options: quickOptions(stopWhen: .queuesEmpty), limit: .seconds(30))
        #expect(stats.succeeded == 0)
        #expect(try await queue.job(job.id)?.state == .ready)
        #expect(try await queue.status().queues.first?.paused == true)
        try await queue.resume(queue: "default")
        try await work(queue)
        #expect(try await queue.job(job.id)?.state == .succeeded)
    }

    @Test(arguments: TestStore.all) func poolClaimsOnlyItsQueues(store: TestStore) async throws {
        let queue = try await store.open()
        let mine = try await queue.enqueue(SumExecutor.self, .init(a: 1, b: 1), options: .init(queue: "mine"))
        let other = try await queue.enqueue(SumExecutor.self, .init(a: 1, b: 1), options: .init(queue: "other"))
        try await work(queue, queues: ["mine"])
        #expect(try await queue.job(mine.id)?.state == .succeeded)
        #expect(try await queue.job(other.id)?.state == .ready)
    }

    @Test(arguments: TestStore.all) func cancelAWaitingJob(store: TestStore) async throws {
        let queue = try await store.open()
        let job = try await queue.enqueue(SumExecutor.self, .init(a: 1, b: 1), options: .init(delay: .seconds(60)))
        let cancelled = try await queue.cancel(job.id)
        #expect(cancelled.state == .cancelled)
        #expect(cancelled.finishedAt != nil)
        await #expect(throws: JobQueueError.self) { try await queue.cancel(job.id) }
        let revived = try await queue.retry(job.id)
        #expect(revived.state == .ready)
    }

    @Test(arguments: TestStore.all) func pruneDeletesOldFinishedJobsOnly(store: TestStore) async throws {
        let queue = try await store.open()
        let done = try await queue.enqueue(SumExecutor.self, .init(a: 1, b: 1))
        try await work(queue)
        let waiting = try await queue.enqueue(SumExecutor.self, .init(a: 1, b: 1), options: .init(delay: .seconds(60)))
        #expect(try await queue.prune(olderThan: .seconds(3600)) == 0)
        await #expect(throws: JobQueueError.self) { try await queue.prune(olderThan: .zero, states: [.ready]) }
        #expect(try await queue.prune(olderThan: .zero) == 1)
        #expect(try await queue.job(done.id) == nil)
        #expect(try await queue.job(waiting.id) != nil)
    }

    @Test(arguments: TestStore.all) func idsAreNeverReused(store: TestStore) async throws {
        let queue = try await store.open()
        let first = try await queue.enqueue(SumExecutor.self, .init(a: 1, b: 1))
        try await work(queue)
        try await queue.prune(olderThan: .zero)
        let second = try await queue.enqueue(SumExecutor.self, .init(a: 1, b: 1))
        #expect(second.id > first.id)
    }
}
