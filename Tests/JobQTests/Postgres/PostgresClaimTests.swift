import Foundation
import JobQ
import PostgresNIO
import Testing

@testable import JobQCore
@testable import JobQPostgres
@testable import JobQSQL

/// The PostgreSQL claim (one statement per queue), completions in one round trip, and the fenced
/// statements of a worker's hot path, on a real server.
@Suite("PostgreSQL claims and completions", .enabled(if: PostgresTestServer.available, PostgresTestServer.skipReason))
struct PostgresClaimTests {
    /// A claim that finds jobs fallen due since the last one makes them ready and takes them
    /// in the same call, beside the ready ones, each running under the worker's lease, the
    /// first `startingNow` with their start recorded (stamped after the claim began) and a
    /// `started` event each.
    @Test func aClaimTakesJobsThatFellDueWithTheReadyOnes() async throws {
        try await PostgresTestServer.withFreshDatabase { settings in
            let queue = try await JobQueue(postgres: settings, logger: PostgresTestServer.logger)
            var ready: [JobID] = []
            for index in 0..<3 {
                ready.append(
                    try await queue.enqueue(try JobRequest(executor: "echo", payloadJSON: "{\"n\":\(index)}")).id)
            }
            var due: [JobID] = []
            for index in 0..<2 {
                var options = JobOptions()
                options.runAt = Date().addingTimeInterval(0.3)
                due.append(
                    try await queue.enqueue(
                        try JobRequest(executor: "echo", payloadJSON: "{\"due\":\(index)}", options: options)
                    ).id)
            }
            #expect(try await queue.job(due[0])?.state == .scheduled)
            try await Task.sleep(for: .milliseconds(400))
            let beforeClaim = Date()
            let claimed = try await queue.store.claim(
                queues: ["default"], limit: 10, workerID: "w1", lease: .seconds(30), startingNow: 4)
            #expect(Set(claimed.map(\.id)) == Set(ready + due), "\(claimed.map(\.id))")
            #expect(claimed.filter(\.startRecorded).count == 4)
            for job in claimed {
                let stored = try #require(try await queue.job(job.id))
                #expect(stored.state == .running && stored.attempt == 1)
                #expect((stored.startedAt != nil) == job.startRecorded)
                if let startedAt = stored.startedAt { #expect(startedAt >= beforeClaim) }
            }
            let started = try await queue.events(after: 0).filter { $0.kind == .started }
            #expect(Set(started.map(\.jobID)) == Set(claimed.filter(\.startRecorded).map(\.id)))
            // Nothing left: the next claim comes back empty.
            #expect(
                try await queue.store.claim(
                    queues: ["default"], limit: 10, workerID: "w2", lease: .seconds(30), startingNow: 1
                ).isEmpty)
        }
    }

    /// A paused queue gives nothing to the one-statement claim; the next queue in the list does.
    @Test func aPausedQueueIsSkippedAndTheNextQueueClaimed() async throws {
        try await PostgresTestServer.withFreshDatabase { settings in
            let queue = try await JobQueue(postgres: settings, logger: PostgresTestServer.logger)
            var first = JobOptions()
            first.queue = "first"
            var second = JobOptions()
            second.queue = "second"
            _ = try await queue.enqueue(try JobRequest(executor: "echo", payloadJSON: "{}", options: first))
            let other = try await queue.enqueue(try JobRequest(executor: "echo", payloadJSON: "{}", options: second))
            try await queue.pause(queue: "first")
            let claimed = try await queue.store.claim(
                queues: ["first", "second"], limit: 5, workerID: "w1", lease: .seconds(30), startingNow: 0)
            #expect(claimed.map(\.id) == [other.id])
        }
    }

    /// The statements a worker names its jobs in by id (renewals, its check of what it still
    /// holds, start marks, successes, single outcomes) never read jobs_leases, whatever the
    /// statistics say (by id, or on a table this small a sequential scan). With statistics that lag behind a burst of claims, PostgreSQL judged
    /// jobs_leases (the partial index of running jobs) nearly empty and scanned all of it for
    /// each one; the control below shows the plain form of the fence still falls into it here.
    @Test func fencedStatementsLookJobsUpByIdWhateverTheStatisticsSay() async throws {
        try await PostgresTestServer.withFreshDatabase { settings in
            let queue = try await JobQueue(postgres: settings, logger: PostgresTestServer.logger)
            try await PostgresTestServer.execute(settings, "ALTER TABLE jobs SET (autovacuum_enabled = false)")
            _ = try await queue.enqueue(
                contentsOf: try (0..<2_000).map { try JobRequest(executor: "echo", payloadJSON: "{\"n\":\($0)}") })
            let claimed = try await queue.store.claim(
                queues: ["default"], limit: 2_000, workerID: "w1", lease: .seconds(60), startingNow: 0)
            #expect(claimed.count == 2_000)
            let store = try #require(queue.store as? ServerStore)
            let ids = StoreSQL.jsonArray(claimed.prefix(100).map(\.id))
            func plan(_ sql: String, _ arguments: SQLArguments) async throws -> String {
                try await store.read { db in
                    try db.fetchAll(String.self, sql: "EXPLAIN " + sql, arguments: arguments).joined(separator: "\n")
                }
            }
            let d = SQLDialect.postgres
            let control = try await plan(
                "SELECT id FROM jobs WHERE \(d.integer("id", in: "?")) AND state = 'running' AND worker_id = ?",
                [ids, "w1"])
            #expect(control.contains("jobs_leases"), "the setup no longer reproduces stale statistics:\n\(control)")
            let renewal = try await plan(
                "UPDATE jobs SET lease_until = ? WHERE \(d.integer("id", in: "?")) AND \(StoreSQL.runningAttempt(of: "?"))",
                [1.0, ids, "w1"])
            let success = try await plan(
                StoreSQL.selfContainedSuccessSQL[1][.postgres], [1.0, "w1", claimed[0].id, 1, "{}", nil])
            let mark = try await plan(StoreSQL.startMarkSQL[1][.postgres], ["w1", claimed[0].id, 1, 1.0])
            for (name, text) in [("renewal", renewal), ("success", success), ("start mark", mark)] {
                #expect(!text.contains("jobs_leases"), "\(name):\n\(text)")
            }
        }
    }

    /// A success recorded in one round trip reads whether its job has dependents after it holds
    /// the write lock: a dependency committed by a rule while the success waited for the lock
    /// (after the success's statement began) is seen, and the dependent is made ready. Read with
    /// the statement's first snapshot, it was missed and the dependent waited forever.
    @Test func aDependencyAddedWhileASuccessWaitsForTheLockIsSeen() async throws {
        try await PostgresTestServer.withFreshDatabase { settings in
            let logger = PostgresTestServer.logger
            let queue = try await JobQueue(postgres: settings, logger: logger)
            let first = try await queue.enqueue(try JobRequest(executor: "echo", payloadJSON: "{}"))
            let claimed = try await queue.store.claim(
                queues: ["default"], limit: 1, workerID: "w1", lease: .seconds(60), startingNow: 1)
            #expect(claimed.map(\.id) == [first.id])
            // A rule's transaction, held open: it takes the write lock exclusively and adds a job
            // that waits for the running one, as an enqueue with `after:` does.
            let rule = try await PostgresConnector(settings: settings, logger: logger).connect()
            defer { Task { try? await rule.close() } }
            try await rule.query("BEGIN", logger: logger)
            try await rule.query(
                PostgresQuery(unsafeSQL: "SELECT pg_advisory_xact_lock(\(settings.schemaNames.writeLockKey))"),
                logger: logger
            )
            let rows = try await rule.query(
                """
                INSERT INTO jobs (queue, executor, payload, priority, state, unmet, max_attempts, run_at, created_at)
                VALUES ('default', 'echo', '{}', 0, 'waiting', 1, 3, 0, 0) RETURNING id
                """, logger: logger)
            var dependent: Int64?
            for try await (id) in rows.decode(Int64.self) { dependent = id }
            let waiting = try #require(dependent)
            try await rule.query(
                PostgresQuery(
                    unsafeSQL: "INSERT INTO dependencies (job_id, depends_on) VALUES (\(waiting), \(first.id))"),
                logger: logger)
            let success = Task {
                try await queue.store.recordOutcomes(
                    [(claimed[0], .succeeded(resultJSON: "{}"))], starting: [], workerID: "w1")
            }
            try await Task.sleep(for: .milliseconds(300))
            #expect(try await queue.job(first.id)?.state == .running, "the success waits for the rule's lock")
            try await rule.query("COMMIT", logger: logger)
            let refused = try await success.value
            #expect(refused.outcomes.isEmpty)
            #expect(try await queue.job(first.id)?.state == .succeeded)
            #expect(try await queue.job(waiting)?.state == .ready, "the dependent was made ready")
        }
    }

    /// With `prepare=off` (a pooler that keeps no prepared statements) the hot path parses each
    /// statement and works the same: enqueue, claim, start and success.
    @Test func withoutPreparedStatementsTheHotPathWorksTheSame() async throws {
        try await PostgresTestServer.withFreshDatabase { settings in
            var unprepared = settings
            unprepared.preparesStatements = false
            let queue = try await JobQueue(postgres: unprepared, logger: PostgresTestServer.logger)
            let jobs = try await queue.enqueue(
                contentsOf: try (0..<3).map { try JobRequest(executor: "echo", payloadJSON: "{\"n\":\($0)}") })
            let claimed = try await queue.store.claim(
                queues: ["default"], limit: 5, workerID: "w1", lease: .seconds(30), startingNow: 0)
            #expect(Set(claimed.map(\.id)) == Set(jobs.map(\.id)))
            let refused = try await queue.store.recordOutcomes(
                claimed.map { ($0, .succeeded(resultJSON: "{}")) }, starting: claimed, workerID: "w1")
            #expect(refused.outcomes.isEmpty && refused.starts.isEmpty)
            for job in jobs {
                let stored = try #require(try await queue.job(job.id))
                #expect(stored.state == .succeeded && stored.startedAt != nil)
            }
        }
    }
}
