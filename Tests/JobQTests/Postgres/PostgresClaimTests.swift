import Foundation
import JobQ
import PostgresNIO
import Testing

@testable import JobQPostgres

/// Claims on PostgreSQL: index order, due jobs made ready, paused queues left alone, the starts
/// of jobs for free slots recorded with their events, and claimers on many connections never
/// handed the same job.
@Suite("PostgreSQL claims", .enabled(if: PostgresTestServer.available, PostgresTestServer.skipReason))
struct PostgresClaimTests {
    let logger = PostgresTestServer.logger

    /// Inserts `count` ready jobs on `queue` (priority and run time as given) and returns their ids.
    static func insertReady(
        _ settings: PostgresSettings, count: Int, queue: String = "default", priority: Int = 0, runAt: Double = 1_000,
        state: String = "ready"
    ) async throws -> [Int64] {
        try await PostgresTestServer.rows(
            settings,
            """
            INSERT INTO jobs (queue, executor, payload, priority, state, run_at, created_at)
            SELECT '\(queue)', 'sum', '{"a": 1, "b": 2}', \(priority), '\(state)', \(runAt), 0 FROM generate_series(1, \(count))
            RETURNING id
            """, as: Int64.self)
    }

    @Test func aClaimTakesPriorityThenRunTimeThenIdAndStartsTheFirstOnes() async throws {
        try await PostgresTestServer.withFreshDatabase { settings in
            try await PostgresSchema.migrate(settings, logger: logger)
            let late = try await Self.insertReady(settings, count: 1, runAt: 2_000)
            let early = try await Self.insertReady(settings, count: 2, runAt: 1_000)
            let urgent = try await Self.insertReady(settings, count: 1, priority: 5, runAt: 3_000)
            let connection = try await PostgresConnector(settings: settings, logger: logger).connect()
            defer { Task { try? await connection.close() } }
            let before = Date().timeIntervalSince1970
            let claimed = try await PostgresClaims.claim(
                queues: ["default"], limit: 3, workerID: "w1", lease: .seconds(30), startingNow: 2, on: connection, logger: logger)
            #expect(claimed.map(\.id) == urgent + early)
            #expect(claimed.allSatisfy { $0.attempt == 1 && $0.executor == "sum" && $0.payloadJSON == #"{"a": 1, "b": 2}"# })
            #expect(claimed.map(\.startRecorded) == [true, true, false])
            let rows = try await PostgresTestServer.rows(
                settings, "SELECT id, state, worker_id, lease_until, started_at FROM jobs ORDER BY id",
                as: (Int64, String, String?, Double?, Double?).self)
            for (id, state, worker, lease, started) in rows {
                if id == late[0] {
                    #expect(state == "ready" && worker == nil)
                } else {
                    #expect(state == "running" && worker == "w1")
                    #expect(lease.map { $0 >= before + 29 && $0 <= Date().timeIntervalSince1970 + 30 } == true)
                    #expect((started != nil) == (id != early[1]), "only the jobs for free slots have started")
                }
            }
            let started = try await PostgresEventLog.events(
                after: 0, filter: EventFilter(kinds: [.started]), limit: 10, on: connection, logger: logger)
            #expect(started.map(\.jobID) == [urgent[0], early[0]])
            #expect(started.first?.dataJSON == #"{"attempt":1,"worker":"w1"}"#)
        }
    }

    @Test func dueJobsAreClaimedFutureOnesAndPausedQueuesAreNot() async throws {
        try await PostgresTestServer.withFreshDatabase { settings in
            try await PostgresSchema.migrate(settings, logger: logger)
            let now = Date().timeIntervalSince1970
            let due = try await Self.insertReady(settings, count: 1, runAt: now - 5, state: "scheduled")
            let retry = try await Self.insertReady(settings, count: 1, runAt: now - 1, state: "failed")
            _ = try await Self.insertReady(settings, count: 1, runAt: now + 3_600, state: "scheduled")
            _ = try await Self.insertReady(settings, count: 1, queue: "mail")
            try await PostgresTestServer.execute(settings, "INSERT INTO queues (name, paused) VALUES ('mail', true)")
            let connection = try await PostgresConnector(settings: settings, logger: logger).connect()
            defer { Task { try? await connection.close() } }
            let claimed = try await PostgresClaims.claim(
                queues: ["mail", "default"], limit: 10, workerID: "w", lease: .seconds(30), startingNow: 0, on: connection, logger: logger)
            #expect(Set(claimed.map(\.id)) == Set(due + retry))
        }
    }

    @Test func claimersOnManyConnectionsNeverShareAJob() async throws {
        try await PostgresTestServer.withFreshDatabase { settings in
            try await PostgresSchema.migrate(settings, logger: logger)
            let all = try await Self.insertReady(settings, count: 2_000)
            let logger = self.logger
            let perWorker = try await withThrowingTaskGroup(of: [Int64].self) { group in
                for worker in 0..<6 {
                    group.addTask {
                        let connection = try await PostgresConnector(settings: settings, logger: logger).connect()
                        defer { Task { try? await connection.close() } }
                        var mine: [Int64] = []
                        while true {
                            let batch = try await PostgresClaims.claim(
                                queues: ["default"], limit: 25, workerID: "w\(worker)", lease: .seconds(30), startingNow: 4,
                                on: connection, logger: logger)
                            if batch.isEmpty { return mine }
                            mine += batch.map(\.id)
                        }
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            let claimed = perWorker.flatMap { $0 }
            #expect(claimed.count == all.count, "every job claimed once: \(claimed.count) claims of \(all.count) jobs")
            #expect(Set(claimed) == Set(all))
            #expect(perWorker.filter { !$0.isEmpty }.count > 1, "the claimers worked side by side")
            let owners = try await PostgresTestServer.rows(
                settings, "SELECT count(*)::bigint FROM jobs WHERE state = 'running' AND attempt = 1", as: Int64.self)
            #expect(owners == [Int64(all.count)])
        }
    }
}
