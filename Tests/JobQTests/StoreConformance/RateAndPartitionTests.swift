import Foundation
import JobQ
import Testing

@testable import JobQCore
@testable import JobQSQL

/// Rate limits and partitioned limits, through the store's claim, on every store.
@Suite("Rate limits and partitions")
struct RateAndPartitionTests {
    static func requests(_ count: Int, queue: String, payload: (Int) -> String = { "{\"n\":\($0)}" }) throws
        -> [JobRequest]
    {
        try (0..<count).map { try JobRequest(executor: "echo", payloadJSON: payload($0), options: .init(queue: queue)) }
    }

    static func claim(_ queue: JobQueue, _ name: String, limit: Int = 50, startingNow: Int = 50, worker: String = "w")
        async throws -> [ClaimedJob]
    {
        try await queue.store.claim(
            queues: [name], limit: limit, workerID: worker, lease: .seconds(30), startingNow: startingNow)
    }

    /// A rate of 3 per 3s: a claim takes 3, the next nothing until the window moves on, and
    /// the claimed jobs started in the claim (none buffered); the outlook says when to look
    /// again instead of "claimable".
    @Test(arguments: TestStore.all) func aRateLimitCapsStartsInItsWindow(store: TestStore) async throws {
        let queue = try await store.open()
        _ = try await queue.enqueue(contentsOf: try Self.requests(10, queue: "rated"))
        try await queue.setLimits(QueueLimits(rate: RateLimit(3, per: .seconds(3))), for: "rated")
        #expect(try await queue.limits(for: "rated").rate == RateLimit(3, per: .seconds(3)))

        let first = try await Self.claim(queue, "rated")
        #expect(first.count == 3 && first.allSatisfy(\.startRecorded), "\(first.map(\.startRecorded))")
        let firstStart = try #require(try await queue.job(first[0].id)?.startedAt).timeIntervalSince1970
        #expect(try await Self.claim(queue, "rated").isEmpty, "the window is full")
        let outlook = try await queue.store.claimOutlook(queues: ["rated"])
        #expect(!outlook.claimable)
        let reopens = try #require(outlook.nextDue)
        #expect(abs(reopens - (firstStart + 3)) < 0.01, "\(reopens - firstStart)")
        let usage = try #require(try await queue.limitUsage(of: "rated"))
        #expect(usage.startsInWindow == 3 && usage.waitingForCapacity == 7 && usage.running == 3, "\(usage)")

        let wait = firstStart + 3.1 - Date().timeIntervalSince1970
        if wait > 0 { try await Task.sleep(for: .milliseconds(Int(wait * 1000))) }
        #expect(try await queue.store.claimOutlook(queues: ["rated"]).claimable)
        // Only free slots: a claim that starts nothing takes nothing from a rate-limited queue.
        #expect(try await Self.claim(queue, "rated", startingNow: 0).isEmpty)
        #expect(try await Self.claim(queue, "rated", startingNow: 2).count == 2, "the window moved on")
    }

    /// The window slides: starts are counted over the last period from every claim, so two
    /// claims within a period together never pass the rate, and a claim's starts leave the
    /// window one period after they were made, not at a boundary.
    @Test(arguments: TestStore.all) func theRateWindowSlides(store: TestStore) async throws {
        let queue = try await store.open()
        _ = try await queue.enqueue(contentsOf: try Self.requests(10, queue: "rated"))
        let period = 3.0
        try await queue.setLimits(QueueLimits(rate: RateLimit(4, per: .seconds(3))), for: "rated")
        let first = try await Self.claim(queue, "rated", startingNow: 2)
        #expect(first.count == 2)
        let firstStart = try #require(try await queue.job(first[0].id)?.startedAt).timeIntervalSince1970
        try await Task.sleep(for: .milliseconds(500))
        // The counts below hold unless the machine stalled for seconds between the claims (a
        // loaded CI run): then the window moved on as it should, and the counts differ. A claim
        // reads its clock somewhere between its call and its return, so a claim that straddles
        // the end of a period may count either way.
        func timedClaim() async throws -> (jobs: [ClaimedJob], calledAt: Double, returnedAt: Double) {
            let calledAt = Date().timeIntervalSince1970
            let jobs = try await Self.claim(queue, "rated")
            return (jobs, calledAt, Date().timeIntervalSince1970)
        }
        func expected(_ claim: (jobs: [ClaimedJob], calledAt: Double, returnedAt: Double), since start: Double)
            -> Set<Int>
        {
            claim.returnedAt - start < period ? [2] : claim.calledAt - start >= period ? [4] : [2, 4]
        }
        let secondClaim = try await timedClaim()
        let second = secondClaim.jobs
        #expect(
            expected(secondClaim, since: firstStart).contains(second.count),
            "4 in the window: 2 left, took \(second.count) \(secondClaim.returnedAt - firstStart)s after the first")
        guard second.count == 2 else { return }
        let secondStart = try #require(try await queue.job(second[0].id)?.startedAt).timeIntervalSince1970
        // Past the first claim's period, within the second's: only the first two left.
        let wait = firstStart + period + 0.1 - Date().timeIntervalSince1970
        if wait > 0 { try await Task.sleep(for: .milliseconds(Int(wait * 1000))) }
        let third = try await timedClaim()
        #expect(
            expected(third, since: secondStart).contains(third.jobs.count),
            "took \(third.jobs.count), \(third.calledAt - secondStart)...\(third.returnedAt - secondStart)s after the second"
        )
    }

    /// A concurrency limit of 2 per customer (a payload member): a claim takes at most 2 of
    /// each customer, skipping a full customer's jobs to reach the others, and a job's own
    /// partition wins over the payload's.
    @Test(arguments: TestStore.all) func aPartitionedLimitAppliesPerPartition(store: TestStore) async throws {
        let queue = try await store.open()
        // Customer a's 20 jobs come first in claim order, then b's 3, then c's 3.
        var requests = try Self.requests(20, queue: "reports") { "{\"customer\":\"a\",\"n\":\($0)}" }
        requests += try Self.requests(3, queue: "reports") { "{\"customer\":\"b\",\"n\":\($0)}" }
        requests += try Self.requests(3, queue: "reports") { "{\"customer\":7,\"n\":\($0)}" }
        var own = try JobRequest(
            executor: "echo", payloadJSON: "{\"customer\":\"a\"}", options: .init(queue: "reports"))
        own.options.partition = "vip"
        requests.append(own)
        _ = try await queue.enqueue(contentsOf: requests)
        try await queue.setLimits(
            QueueLimits(concurrency: 2, partitionBy: .payload("/customer")), for: "reports")

        let claimed = try await Self.claim(queue, "reports", limit: 50, startingNow: 0)
        let customers = claimed.map { job -> String in
            if job.payloadJSON == "{\"customer\":\"a\"}" { return "vip" }
            return job.payloadJSON.contains("\"a\"") ? "a" : job.payloadJSON.contains("\"b\"") ? "b" : "7"
        }
        #expect(customers.sorted() == ["7", "7", "a", "a", "b", "b", "vip"], "\(customers)")
        #expect(try await Self.claim(queue, "reports").isEmpty, "every partition is full")
        #expect(!(try await queue.store.claimOutlook(queues: ["reports"]).claimable))

        let usage = try #require(try await queue.limitUsage(of: "reports"))
        #expect(usage.partitionCount == 4 && usage.running == 7 && usage.waitingForCapacity == 20)
        #expect(
            usage.busiestPartitions.first
                == PartitionUsage(
                    partition: "a", running: 2, ready: 18, waitingForCapacity: 18, startsInWindow: nil))

        // b's job finishes: one place for b, and only b's next job takes it.
        let bJob = try #require(claimed.first { $0.payloadJSON.contains("\"b\"") })
        _ = try await queue.store.recordOutcomes([(bJob, .succeeded(resultJSON: "{}"))], starting: [], workerID: "w")
        #expect(try await queue.store.claimOutlook(queues: ["reports"]).claimable)
        let next = try await Self.claim(queue, "reports")
        #expect(next.count == 1 && next[0].payloadJSON.contains("\"b\""), "\(next.map(\.payloadJSON))")
    }

    /// A rate per job partition: each partition gets the whole rate.
    @Test(arguments: TestStore.all) func aPartitionedRateAppliesPerJobPartition(store: TestStore) async throws {
        let queue = try await store.open()
        var requests: [JobRequest] = []
        for tenant in ["t1", "t2"] {
            for n in 0..<5 {
                var request = try JobRequest(
                    executor: "echo", payloadJSON: "{\"n\":\(n)}", options: .init(queue: "api"))
                request.options.partition = tenant
                requests.append(request)
            }
        }
        _ = try await queue.enqueue(contentsOf: requests)
        try await queue.setLimits(
            QueueLimits(rate: RateLimit(2, per: .seconds(60)), partitionBy: .jobPartition), for: "api")
        let claimed = try await Self.claim(queue, "api")
        let jobs = try await queue.jobs(limit: 20)
        let partitions = claimed.map { job in jobs.first { $0.id == job.id }?.partition ?? "?" }
        #expect(partitions.sorted() == ["t1", "t1", "t2", "t2"], "\(partitions)")
        #expect(try await Self.claim(queue, "api").isEmpty)
        let usage = try #require(try await queue.limitUsage(of: "api"))
        #expect(usage.startsInWindow == 4 && usage.waitingForCapacity == 6)
        #expect(usage.busiestPartitions.map(\.startsInWindow) == [2, 2])
    }

    /// Bad limits are refused with what to give, and nothing changes.
    @Test(arguments: TestStore.all) func badRatesAndPointersAreRefused(store: TestStore) async throws {
        let queue = try await store.open()
        try await queue.setLimits(QueueLimits(concurrency: 2), for: "q")
        let bad: [(QueueLimits, String)] = [
            (QueueLimits(rate: RateLimit(0, per: .seconds(1))), "1 or more"),
            (QueueLimits(rate: RateLimit(5, per: .seconds(2 * 86_400))), "1ms to 1d"),
            (QueueLimits(concurrency: 1, partitionBy: .payload("customer")), "JSON pointer"),
            (QueueLimits(concurrency: 1, partitionBy: .payload("/items/0")), "array index"),
            (QueueLimits(concurrency: 1, partitionBy: .payload("/a\"b")), "quote")
        ]
        for (limits, message) in bad {
            await #expect {
                try await queue.setLimits(limits, for: "q")
            } throws: { error in
                "\(error)".contains(message)
            }
        }
        #expect(try await queue.limits(for: "q") == QueueLimits(concurrency: 2))
        #expect(throws: JobQueueError.self) { try RateLimit(parsing: "100") }
        #expect(throws: JobQueueError.self) { try RateLimit(parsing: "x/1m") }
        #expect(try RateLimit(parsing: "100/1m") == RateLimit(100, per: .seconds(60)))
        await #expect(throws: JobQueueError.self) {
            try await queue.enqueue(try JobRequest(executor: "echo", payloadJSON: "{}", options: .init(partition: "")))
        }
    }
}
