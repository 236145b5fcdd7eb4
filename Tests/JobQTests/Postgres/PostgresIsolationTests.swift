import Foundation
import JobQ
import Logging
import PostgresNIO
import Testing

@testable import JobQCore
@testable import JobQPostgres
@testable import JobQSQL

/// A queue whose claim waits on a lock another session holds costs the worker's other queues
/// at most 200 ms a try, and its own claims are backed off rather than retried three times a
/// second.
@Suite(
    "PostgreSQL: a locked queue holds up nothing else",
    .enabled(if: PostgresTestServer.available, PostgresTestServer.skipReason))
struct PostgresIsolationTests {
    /// Runs alone (``RunsAlone``): it bounds a wait in seconds, which the suite's load beside it
    /// could stretch.
    @Test(RunsAlone.trait) func aQueueRowHeldByAnotherSessionDoesNotStallTheOtherQueues() async throws {
        try await PostgresTestServer.withFreshDatabase { settings in
            let queue = try await JobQueue(postgres: settings, logger: PostgresTestServer.logger)
            try await queue.setLimits(QueueLimits(concurrency: 2), for: "limq")
            let limited = try await queue.enqueue(
                try JobRequest(executor: "echo", payloadJSON: "{}", options: .init(queue: "limq")))
            let others = try await queue.enqueue(
                contentsOf: try (0..<12).map { _ in
                    try JobRequest(executor: "echo", payloadJSON: "{}", options: .init(queue: "otherq"))
                })
            // Another session holds limq's row, as an operator's open transaction would.
            let holder = try await PostgresConnector(settings: settings, logger: PostgresTestServer.logger).connect()
            // Each answer read to its end: postgres-nio sends the next query only after that.
            _ = try await holder.query(
                "SET idle_in_transaction_session_timeout = 0", logger: PostgresTestServer.logger
            ).collect()
            _ = try await holder.query("BEGIN", logger: PostgresTestServer.logger).collect()
            _ = try await holder.query(
                "SELECT name FROM queues WHERE name = 'limq' FOR UPDATE", logger: PostgresTestServer.logger
            ).collect()

            let log = LogRecorder()
            let pool = WorkerPool(
                queue: queue, queues: ["limq", "otherq"], executors: BuiltinExecutors.all,
                options: quickOptions(stopWhen: .never), logger: Logger(label: "test") { _ in log })
            let running = Task { try await pool.run() }
            defer { running.cancel() }
            let started = ContinuousClock.now
            try await eventually(.seconds(15), "otherq's jobs to succeed while limq's row is held") {
                let states = try await others.asyncMap { try await queue.job($0.id)?.state }
                return states.allSatisfy { $0 == .succeeded }
            }
            // Without the bound, each claim of limq waited out the session's lock_timeout (10 s)
            // before otherq was claimed; with it, 200 ms (seconds only on a loaded machine).
            #expect(
                ContinuousClock.now - started < .seconds(8),
                "otherq waited \(ContinuousClock.now - started): \(log.messages.joined(separator: "\n"))")
            try await Task.sleep(for: .seconds(2))
            let failures = log.messages.filter { $0.contains("claims from queue 'limq' wait") }
            #expect(
                (1...10).contains(failures.count),
                "\(failures.count) failed claims of limq logged (backed off, not 3 a second)")
            #expect(try await queue.job(limited.id)?.state == .ready)

            _ = try await holder.query("ROLLBACK", logger: PostgresTestServer.logger).collect()
            try await holder.close()
            try await eventually(.seconds(10), "limq's job to succeed once its row is free") {
                try await queue.job(limited.id)?.state == .succeeded
            }
            running.cancel()
            _ = try await within(.seconds(20), "the pool to stop") { try? await running.value }
        }
    }
}
