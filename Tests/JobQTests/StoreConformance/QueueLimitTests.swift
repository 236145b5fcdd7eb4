import Foundation
import JobQ
import JobQPostgres
import Testing

@testable import JobQCore
@testable import JobQSQL

/// Queue limits: a concurrency limit holds across every worker and connection.
@Suite("Queue limits")
struct QueueLimitTests {
    static func limitedRequests(_ count: Int, queue: String = "limited") throws -> [JobRequest] {
        try (0..<count).map {
            try JobRequest(executor: "echo", payloadJSON: "{\"n\":\($0)}", options: .init(queue: queue))
        }
    }

    /// A claim takes no more of a limited queue than the limit less its running jobs (those
    /// claimed ahead count), other queues as before; a finished job frees its place; removing
    /// the limit frees the rest; `status` shows it.
    @Test(arguments: TestStore.all) func aConcurrencyLimitCapsWhatClaimsTake(store: TestStore) async throws {
        let queue = try await store.open()
        _ = try await queue.enqueue(contentsOf: try Self.limitedRequests(10))
        let other = try await queue.enqueue(try JobRequest(executor: "echo", payloadJSON: "{}"))
        try await queue.setLimits(QueueLimits(concurrency: 3), for: "limited")
        #expect(try await queue.limits(for: "limited") == QueueLimits(concurrency: 3))
        #expect(try await queue.limits(for: "default") == QueueLimits())

        let first = try await queue.store.claim(
            queues: ["limited", "default"], limit: 10, workerID: "w1", lease: .seconds(30), startingNow: 2)
        #expect(first.filter { $0.queue == "limited" }.count == 3 && first.contains { $0.id == other.id })
        #expect(
            try await queue.store.claim(
                queues: ["limited"], limit: 10, workerID: "w2", lease: .seconds(30), startingNow: 1
            ).isEmpty, "no place left")
        let finished = try #require(first.first { $0.queue == "limited" })
        _ = try await queue.store.recordOutcomes(
            [(finished, .succeeded(resultJSON: "{}"))], starting: [], workerID: "w1")
        let second = try await queue.store.claim(
            queues: ["limited"], limit: 10, workerID: "w2", lease: .seconds(30), startingNow: 1)
        #expect(second.count == 1, "the finished job's place")
        let status = try await queue.status()
        #expect(status.queues.first { $0.name == "limited" }?.limits.concurrency == 3)
        #expect(status.queues.first { $0.name == "default" }?.limits.concurrency == nil)

        try await queue.setLimits(QueueLimits(), for: "limited")
        let rest = try await queue.store.claim(
            queues: ["limited"], limit: 10, workerID: "w3", lease: .seconds(30), startingNow: 0)
        #expect(rest.count == 6, "no limit: every ready job")
    }

    /// A limit below 1 is refused, saying what to give, and the limit stays as it was.
    @Test(arguments: TestStore.all) func aLimitBelowOneIsRefusedAndChangesNothing(store: TestStore) async throws {
        let queue = try await store.open()
        try await queue.setLimits(QueueLimits(concurrency: 2), for: "limited")
        for bad in [0, -3] {
            await #expect {
                try await queue.setLimits(QueueLimits(concurrency: bad), for: "limited")
            } throws: { error in
                "\(error)".contains("\(bad)") && "\(error)".contains("1 or more")
            }
        }
        #expect(try await queue.limits(for: "limited") == QueueLimits(concurrency: 2))
    }

    /// Eight workers on connections of their own claim a limited queue at once: together they
    /// take exactly the limit, never more.
    @Test(arguments: TestStore.all) func claimsRacingOnManyConnectionsNeverPassTheLimit(store: TestStore) async throws {
        let location = try await store.location()
        let queue = try await store.open(at: location)
        _ = try await queue.enqueue(contentsOf: try Self.limitedRequests(40))
        try await queue.setLimits(QueueLimits(concurrency: 3), for: "limited")
        var workers: [JobQueue] = []
        for _ in 0..<8 { workers.append(try await store.open(at: location)) }
        let claimed = try await withThrowingTaskGroup(of: Int.self) { group in
            for (index, worker) in workers.enumerated() {
                group.addTask {
                    // As a pool does: a claim that waited too long for the queue's row (a transient
                    // failure on a loaded machine: PostgreSQL bounds that wait) is tried again.
                    for _ in 1...20 {
                        do {
                            return try await worker.store.claim(
                                queues: ["limited"], limit: 10, workerID: "w\(index)", lease: .seconds(30),
                                startingNow: 1
                            ).count
                        } catch let error where StoreErrorKind(of: error) == .transient {
                            try await Task.sleep(for: .milliseconds(50))
                        }
                    }
                    return try await worker.store.claim(
                        queues: ["limited"], limit: 10, workerID: "w\(index)", lease: .seconds(30), startingNow: 1
                    ).count
                }
            }
            return try await group.reduce(0, +)
        }
        #expect(claimed == 3)
        #expect(try await queue.status().queues.first { $0.name == "limited" }?.counts["running"] == 3)
    }
}
