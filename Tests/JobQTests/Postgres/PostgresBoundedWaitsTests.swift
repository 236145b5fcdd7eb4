import Foundation
import JobQ
import LatencyRelay
import Logging
import Testing

@testable import JobQCore
@testable import JobQPostgres
@testable import JobQSQL

/// Every PostgreSQL session is bounded (statements, lock waits, idle transactions, keepalives),
/// so that one stuck worker cannot hold the others up for longer than the bounds, and a
/// connection the server ended is replaced, with a log line that says so.
@Suite(
    "PostgreSQL: bounded waits", .enabled(if: PostgresTestServer.available, PostgresTestServer.skipReason), .serialized)
struct PostgresBoundedWaitsTests {
    @Test func everySessionCarriesItsBounds() async throws {
        var settings = try await PostgresTestDatabases.shared.fresh()
        settings.timeouts.statement = .seconds(45)
        settings.timeouts.lock = .milliseconds(2500)
        let queue = try await JobQueue(postgres: settings, logger: PostgresTestServer.logger)
        let rows = try await queue.storedRows(
            """
            SELECT name, setting FROM pg_settings WHERE name IN ('statement_timeout', 'lock_timeout',
                'idle_in_transaction_session_timeout', 'tcp_keepalives_idle', 'tcp_keepalives_interval',
                'tcp_keepalives_count')
            """)
        let values = Dictionary(uniqueKeysWithValues: rows.map { ($0["name"] as String, $0["setting"] as String) })
        #expect(
            values == [
                "statement_timeout": "45000", "lock_timeout": "2500", "idle_in_transaction_session_timeout": "5000",
                "tcp_keepalives_idle": "30", "tcp_keepalives_interval": "10", "tcp_keepalives_count": "3"
            ])
    }

    /// A server that stops answering while the connection stays open (a cut network, a hung
    /// machine: TCP may take many minutes to notice) is given up on once the statement bound and
    /// its 5 s margin have passed: the write fails with a clear error instead of hanging, and
    /// once the network is back the next write goes on, on a new connection, with a log line.
    @Test func aCutNetworkEndsTheWaitAtTheClientDeadline() async throws {
        let direct = try await PostgresTestDatabases.shared.fresh()
        _ = try await JobQueue(postgres: direct, logger: PostgresTestServer.logger)  // the schema
        let relay = try LatencyRelay(targetHost: direct.host, targetPort: direct.port, oneWayDelay: .zero)
        defer { relay.stop() }
        var settings = direct
        settings.host = "127.0.0.1"
        settings.port = relay.port
        settings.timeouts.statement = .seconds(1)
        let logs = LogRecorder()
        logs.logLevel = .warning
        let queue = try await JobQueue(postgres: settings, logger: Logger(label: "test") { _ in logs })
        // Both writer connections open and answer.
        for _ in 0..<2 { try await queue.enqueue(try JobRequest(executor: "echo", payloadJSON: "{}")) }
        relay.cut()
        let cutAt = ContinuousClock.now
        // Without the deadline this write would wait for TCP to give up: the test bounds it.
        let outcome = try await within(.seconds(40), "the write to give up") { () -> String in
            do {
                try await queue.enqueue(try JobRequest(executor: "echo", payloadJSON: "{}"))
                return "written"
            } catch let error as JobQueueError {
                return "\(error)"
            }
        }
        #expect(outcome.contains("PostgreSQL connection failed"), "\(outcome)")
        let waited = ContinuousClock.now - cutAt
        // The deadline is 1 s + 5 s, checked every second.
        #expect(waited >= .seconds(5) && waited < .seconds(30), "gave up after \(waited)")
        relay.restore()
        for _ in 0..<2 { try await queue.enqueue(try JobRequest(executor: "echo", payloadJSON: "{}")) }
        #expect(logs.messages.contains { $0.contains("lost the connection") }, "\(logs.messages)")
    }

    @Test func aConnectionTheServerEndedIsReplacedAndTheLogSaysSo() async throws {
        let settings = try await PostgresTestDatabases.shared.fresh()
        let logs = LogRecorder()
        logs.logLevel = .warning
        let queue = try await JobQueue(postgres: settings, logger: Logger(label: "test") { _ in logs })
        let first = try await queue.enqueue(try JobRequest(executor: "echo", payloadJSON: "{}"))
        #expect(try await queue.job(first.id) != nil)
        // An administrator (or a server restart) ends every session of the database.
        try await PostgresTestServer.execute(
            settings,
            """
            SELECT pg_terminate_backend(pid) FROM pg_stat_activity
            WHERE datname = current_database() AND pid <> pg_backend_pid()
            """)
        try await eventually(.seconds(10), "the sessions to end") {
            try await PostgresTestServer.rows(
                settings,
                "SELECT count(*)::int FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()",
                as: Int.self
            ).first == 0
        }
        // The next writes and reads go on, on new connections, without an error (a few of
        // each: a process writes and reads on more than one connection).
        var ids = [first.id]
        for _ in 0..<4 {
            ids.append(try await queue.enqueue(try JobRequest(executor: "echo", payloadJSON: "{}")).id)
            #expect(try await queue.jobs(queue: nil, state: .ready, limit: 10, after: nil).map(\.id) == ids)
        }
        #expect(
            logs.messages.contains { $0.contains("lost the connection") }, "\(logs.messages)")
    }

    /// A worker stopped (SIGSTOP) inside a write transaction holds its locks only until the
    /// server ends its idle session (5 s by default): two other workers drain the queue, and
    /// every job ends exactly once. With a lock timeout shorter than that bound, the workers'
    /// lock waits fail first: their registration and claims are tried again, and they still drain.
    @Test(arguments: [nil, 1]) func aWorkerStoppedInsideAWriteTransactionHoldsTheOthersUpOnlyForTheIdleBound(
        lockTimeoutSeconds: Int?
    ) async throws {
        var settings = try await PostgresTestDatabases.shared.fresh()
        if let lockTimeoutSeconds { settings.timeouts.lock = .seconds(lockTimeoutSeconds) }
        let url = settings.description
        let queue = try await JobQueue(postgres: settings, logger: PostgresTestServer.logger)
        let jobs = 200
        _ = try await queue.enqueue(
            contentsOf: try (0..<jobs).map { try JobRequest(executor: "echo", payloadJSON: #"{"n":\#($0)}"#) })

        let scratch = TestScratch.url("stop-in-write")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        let helper = CLI.binary.deletingLastPathComponent().appendingPathComponent("jobq-test-helper")
        let stopped = try Child(
            executable: helper, arguments: ["stop-in-write", "--db", url], environment: [:],
            stdoutPath: scratch.appendingPathComponent("helper.out").path,
            stderrPath: scratch.appendingPathComponent("helper.err").path)
        defer { kill(stopped.processIdentifier, SIGKILL) }
        try await eventually(.seconds(30), "the helper to stop inside its transaction") {
            Self.isStopped(stopped.processIdentifier)
        }
        // It holds the store's write lock, idle in its transaction.
        let idle = try await PostgresTestServer.rows(
            settings,
            "SELECT count(*)::int FROM pg_stat_activity WHERE datname = current_database() AND state = 'idle in transaction'",
            as: Int.self)
        #expect(idle.first == 1)

        let started = ContinuousClock.now
        async let one = CLI.run(["work", "--until-empty", "--concurrency", "4"], db: url)
        async let two = CLI.run(["work", "--until-empty", "--concurrency", "4"], db: url)
        let results = try await [one, two]
        let elapsed = ContinuousClock.now - started
        for result in results { #expect(result.status == 0, "\(result.stderr)") }
        // The idle bound (5 s) plus the drain; without the bound they would wait for ever (or,
        // with the lock timeout, fail).
        #expect(elapsed < .seconds(60), "drained in \(elapsed)")
        let succeeded = try await queue.jobs(queue: nil, state: .succeeded, limit: jobs + 1, after: nil)
        #expect(succeeded.count == jobs)
        #expect(succeeded.allSatisfy { $0.attempt == 1 })
        let events = try await queue.storedRows(
            "SELECT count(*) AS n, count(DISTINCT job_id) AS jobs FROM events WHERE kind = 'succeeded'")
        #expect(events.first.map { $0["n"] as Int } == jobs && events.first.map { $0["jobs"] as Int } == jobs)
    }

    /// Whether the process is stopped (state T in /proc).
    static func isStopped(_ pid: Int32) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return false }
        return stat[stat.index(close, offsetBy: 2)...].hasPrefix("T")
    }
}
