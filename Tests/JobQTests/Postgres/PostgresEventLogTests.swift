import Foundation
import PostgresNIO
import Synchronization
import Testing

@testable import JobQCore
@testable import JobQPostgres
@testable import JobQSQL
@testable import JobQSQLite

/// The PostgreSQL store's promises when many processes write at once: the event feed has one
/// order that never changes, (writing transaction, id), so a follower resuming after the last
/// id it saw misses nothing and sees nothing twice; and claimers on many connections are never
/// handed the same job.
@Suite("PostgreSQL under concurrent writers", .enabled(if: PostgresTestServer.available, PostgresTestServer.skipReason))
struct PostgresEventLogTests {
    /// Runs `writers`, with a follower reading the feed after its cursor as fast as it can until
    /// they are done and the feed has nothing more. Returns the ids it saw, in order.
    static func follow(_ follower: JobQueue, while writers: @escaping @Sendable () async throws -> Void) async throws
        -> [Int64]
    {
        let writersDone = Flag()
        return try await withThrowingTaskGroup(of: [Int64].self) { group in
            group.addTask {
                try await writers()
                writersDone.value.store(true, ordering: .releasing)
                return []
            }
            group.addTask {
                var cursor: Int64 = 0
                var ids: [Int64] = []
                while true {
                    let finished = writersDone.value.load(ordering: .acquiring)
                    let page = try await follower.events(after: cursor, limit: 1000)
                    ids += page.map(\.id)
                    cursor = page.last?.id ?? cursor
                    if finished && page.isEmpty { return ids }
                }
            }
            return try await group.reduce(into: []) { $0 += $1 }
        }
    }

    /// Eight stores of their own (eight connections, as eight processes would have) enqueue
    /// batches of one to three jobs while a follower reads after its cursor as fast as it can.
    @Test func aFollowerSeesEveryEventOnceWhileManyStoresWrite() async throws {
        let settings = try await PostgresTestDatabases.shared.fresh()
        let follower = try await JobQueue(postgres: settings, logger: PostgresTestServer.logger)
        let seen = try await Self.follow(follower) {
            try await withThrowingTaskGroup(of: Void.self) { writers in
                for _ in 0..<8 {
                    writers.addTask {
                        let queue = try await JobQueue(postgres: settings, logger: PostgresTestServer.logger)
                        for round in 0..<40 {
                            let requests = try (0...(round % 3)).map {
                                try JobRequest(SumExecutor.self, .init(a: round, b: $0))
                            }
                            _ = try await queue.enqueue(contentsOf: requests)
                        }
                    }
                }
                try await writers.waitForAll()
            }
        }
        let all = try await Self.feedOrder(follower)
        let perWriter: Int = (0..<40).map { $0 % 3 + 1 }.reduce(0, +)
        #expect(all.count == 8 * perWriter)
        #expect(seen == all, "the follower missed \(Set(all).subtracting(seen).count) events")
    }

    /// Every event id in the feed's order, read after the writers are done.
    static func feedOrder(_ queue: JobQueue) async throws -> [Int64] {
        try await queue.storedRows("SELECT id FROM events ORDER BY xact, id").map { $0["id"] as Int64 }
    }

    /// Transactions that insert events with no lock at all and pause before they commit, so a
    /// later id often commits first: the feed still misses nothing, because it reads in
    /// transaction order up to the oldest transaction still running. A follower that read by
    /// id alone, as the feed did under one write lock, passes earlier ids that commit later and
    /// never reads them (48 to 72 of 800 when this was written): the check can tell.
    @Test func transactionsWithoutAnyLockStillReachTheFollowerInOrder() async throws {
        let settings = try await PostgresTestDatabases.shared.fresh()
        let logger = PostgresTestServer.logger
        let follower = try await JobQueue(postgres: settings, logger: logger)
        let byID = IDs()
        let seen = try await Self.follow(follower) {
            try await withThrowingTaskGroup(of: Void.self) { writers in
                for _ in 0..<8 {
                    writers.addTask {
                        let connection = try await PostgresConnector(settings: settings, logger: logger).connect()
                        defer { Task { try? await connection.close() } }
                        for round in 0..<40 {
                            try await connection.withTransaction(logger: logger) { connection in
                                for _ in 0...(round % 3) {
                                    try await connection.query(
                                        "INSERT INTO events (kind, created_at) VALUES ('progress', 0)", logger: logger)
                                }
                                try await Task.sleep(for: .microseconds(Int.random(in: 0...1500)))
                            }
                        }
                    }
                }
                // The naive follower, beside the writers.
                writers.addTask {
                    let connection = try await PostgresConnector(settings: settings, logger: logger).connect()
                    defer { Task { try? await connection.close() } }
                    var cursor: Int64 = 0
                    for _ in 0..<4_000 {
                        let rows = try await connection.query(
                            "SELECT id FROM events WHERE id > \(cursor) ORDER BY id", logger: logger
                        ).collect()
                        let ids = try rows.map { try $0.decode(Int64.self) }
                        byID.list.withLock { $0 += ids }
                        cursor = ids.last ?? cursor
                        if ids.isEmpty { try await Task.sleep(for: .microseconds(200)) }
                    }
                }
                try await writers.waitForAll()
            }
        }
        let all = try await Self.feedOrder(follower)
        let perWriter: Int = (0..<40).map { $0 % 3 + 1 }.reduce(0, +)
        #expect(all.count == 8 * perWriter)
        #expect(seen == all, "the feed missed \(Set(all).subtracting(seen).count) events")
        let naive = byID.list.withLock { $0 }
        #expect(Set(all).subtracting(naive).count > 0, "reading by id alone should have skipped events")
    }

    /// Sixteen stores write at once what a fleet writes: self-contained enqueues, lane jobs and
    /// workflows (exclusive writes), claims and completions (shared writes, side by side). A
    /// follower reading as fast as it can sees every event exactly once, in the order the feed
    /// has once everything is written: no event ever appeared before one it had already passed.
    @Test func sixteenWritersOfEveryKindAndAFollowerThatMissesNothing() async throws {
        let settings = try await PostgresTestDatabases.shared.fresh()
        let logger = PostgresTestServer.logger
        let follower = try await JobQueue(postgres: settings, logger: logger)
        let seen = try await Self.follow(follower) {
            try await withThrowingTaskGroup(of: Void.self) { writers in
                for writer in 0..<16 {
                    writers.addTask {
                        let queue = try await JobQueue(postgres: settings, logger: logger)
                        for round in 0..<25 {
                            switch writer % 4 {
                            case 0:
                                _ = try await queue.enqueue(
                                    contentsOf: (0...(round % 3)).map {
                                        try JobRequest(SumExecutor.self, .init(a: round, b: $0))
                                    })
                            case 1:
                                try await queue.enqueue(
                                    SumExecutor.self, .init(a: round, b: 0), options: .init(lane: "lane\(writer)"))
                            case 2:
                                let claimed = try await queue.store.claim(
                                    queues: ["default"], limit: 4, workerID: "w\(writer)", lease: .seconds(60),
                                    startingNow: 2)
                                _ = try await queue.store.recordOutcomes(
                                    claimed.map { ($0, .succeeded(resultJSON: #"{"sum":0}"#)) },
                                    starting: Array(claimed.dropFirst(2)), workerID: "w\(writer)")
                            default:
                                try await queue.submit(
                                    try Workflow(name: "w\(writer).\(round)") {
                                        try WorkflowStep(SumExecutor.self, .init(a: 1, b: 2))
                                        try WorkflowStep(SumExecutor.self, .init(a: 3, b: 4))
                                    })
                            }
                        }
                    }
                }
                try await writers.waitForAll()
            }
        }
        let all = try await Self.feedOrder(follower)
        #expect(Set(seen).count == seen.count, "no event twice")
        #expect(seen == all, "the follower missed \(Set(all).subtracting(seen).count) of \(all.count) events")
        let kinds = try await follower.storedRows("SELECT DISTINCT kind FROM events").map { $0["kind"] as String }
        #expect(Set(kinds).isSuperset(of: ["enqueued", "started", "succeeded"]), "\(kinds)")
        let succeeded: Int =
            try await follower.storedRows(
                "SELECT COUNT(*) AS n FROM jobs WHERE state = 'succeeded'"
            ).first?["n"] ?? 0
        #expect(succeeded > 0, "completions ran beside the other writes")
    }

    /// A page read holds every commit its caller saw: while an older transaction of the
    /// database is still open, the events of a newer commit are held back (they would come
    /// before its events), so the read waits for it to end, 2 s at most, and then returns both.
    /// Past 2 s it returns what it may without them: the documented limit.
    @Test func aPageReadWaitsForOlderTransactionsToEnd() async throws {
        let settings = try await PostgresTestDatabases.shared.fresh()
        let logger = PostgresTestServer.logger
        let queue = try await JobQueue(postgres: settings, logger: logger)
        let older = try await PostgresConnector(settings: settings, logger: logger).connect()
        defer { Task { try? await older.close() } }
        for holdMilliseconds in [300, 6_000] {
            let cursor = try await queue.latestEventID()
            try await older.query("BEGIN", logger: logger)
            try await older.query("INSERT INTO events (kind, created_at) VALUES ('progress', 0)", logger: logger)
            let job = try await queue.enqueue(try JobRequest(executor: "echo", payloadJSON: "{}"))
            let started = ContinuousClock.now
            let commit = Task {
                // The server's sleep, not the client's: a session idle in a transaction is
                // ended after 5 s (idle_in_transaction_session_timeout).
                try await older.query("SELECT pg_sleep(\(Double(holdMilliseconds) / 1000))", logger: logger)
                try await older.query("COMMIT", logger: logger)
            }
            let page = try await queue.events(after: cursor)
            let waited = ContinuousClock.now - started
            try await commit.value
            if holdMilliseconds < 2_000 {
                #expect(page.map(\.kind) == [.progress, .enqueued], "\(page)")
                #expect(page.last?.jobID == job.id)
                #expect(waited >= .milliseconds(250), "it waited for the older transaction: \(waited)")
            } else {
                #expect(page.isEmpty, "past the bound, nothing after the open transaction: \(page)")
                #expect(waited >= .seconds(2) && waited < .milliseconds(5_500), "\(waited)")
                let after = try await queue.events(after: cursor)
                #expect(after.map(\.kind) == [.progress, .enqueued], "once it ended: \(after)")
            }
        }
    }

    /// Six stores claim 2,000 jobs side by side, 25 at a time: each job is handed out once.
    @Test func claimersOnManyConnectionsNeverShareAJob() async throws {
        let settings = try await PostgresTestDatabases.shared.fresh()
        let producer = try await JobQueue(postgres: settings, logger: PostgresTestServer.logger)
        let all = try await producer.enqueue(
            contentsOf: (0..<2_000).map { try JobRequest(SumExecutor.self, .init(a: $0, b: 1)) })
        let perWorker = try await withThrowingTaskGroup(of: [Int64].self) { group in
            for worker in 0..<6 {
                group.addTask {
                    let queue = try await JobQueue(postgres: settings, logger: PostgresTestServer.logger)
                    var mine: [Int64] = []
                    while true {
                        let batch = try await queue.store.claim(
                            queues: ["default"], limit: 25, workerID: "w\(worker)", lease: .seconds(30), startingNow: 4)
                        if batch.isEmpty { return mine }
                        mine += batch.map(\.id)
                    }
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        let claimed = perWorker.flatMap { $0 }
        #expect(claimed.count == all.count, "every job claimed once: \(claimed.count) claims of \(all.count) jobs")
        #expect(Set(claimed) == Set(all.map(\.id)))
        #expect(perWorker.filter { !$0.isEmpty }.count > 1, "the claimers worked side by side")
        let running = try await producer.storedRows(
            "SELECT COUNT(*) AS n FROM jobs WHERE state = 'running' AND attempt = 1")
        #expect(running.first?["n"] == all.count)
    }
}

/// Set once the writers are done: the follower's last read starts after it.
private final class Flag: Sendable {
    let value = Atomic<Bool>(false)
}

/// Ids a task gathers while others run.
private final class IDs: Sendable {
    let list = Mutex<[Int64]>([])
}
