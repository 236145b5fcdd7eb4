import Foundation
import JobQ
import Logging
import Testing

@testable import JobQCore
@testable import JobQPostgres

/// jobq behind Debian's PgBouncer in transaction pooling (`scripts/pgbouncer.sh`, started by
/// CI), with `prepare=off`: a named subset of what the store does (enqueue, claim, completion,
/// a dependent, a workflow, a limited queue, the event feed, the cleaner), and wake-ups, which
/// fall back to the poll because LISTEN needs a session of its own.
@Suite("PostgreSQL through PgBouncer", RunsAlone.trait)
struct PgBouncerTests {
    static let url = ProcessInfo.processInfo.environment["JOBQ_TEST_PGBOUNCER_URL"]

    /// A fresh database (made directly) and its settings through the pooler; nil, after saying
    /// so, when there is no pooler to test through.
    static func throughPooler() async throws -> (direct: PostgresSettings, pooled: PostgresSettings)? {
        guard PostgresTestServer.available else { return nil }
        guard let url else {
            Issue.record("no PgBouncer: set JOBQ_TEST_PGBOUNCER_URL (scripts/pgbouncer.sh start)")
            return nil
        }
        let direct = try await PostgresTestDatabases.shared.fresh()
        var pooled = try PostgresSettings(url: url)
        pooled.database = direct.database
        #expect(!pooled.preparesStatements, "the pooler's URL says prepare=off")
        return (direct, pooled)
    }

    /// A worker pool on `worker`, its log recorded, and a producer on `producer`.
    static func idleWorker(worker: PostgresSettings, producer: PostgresSettings) async throws -> (
        log: LogRecorder, producer: JobQueue, running: Task<Void, any Error>
    ) {
        let log = LogRecorder()
        let logger = Logger(label: "test") { _ in log }
        let queue = try await JobQueue(postgres: worker, logger: logger)
        let pool = WorkerPool(
            queue: queue, executors: BuiltinExecutors.all, options: quickOptions(stopWhen: .never), logger: logger)
        return (
            log, try await JobQueue(postgres: producer, logger: PostgresTestServer.logger),
            Task { try await pool.run() }
        )
    }

    @Test func theHotPathAndWhatFollowsFromItWorkThroughThePooler() async throws {
        guard let (_, pooled) = try await Self.throughPooler() else { return }
        let queue = try await JobQueue(postgres: pooled, logger: PostgresTestServer.logger)
        let first = try await queue.enqueue(SumExecutor.self, .init(a: 1, b: 2))
        let batch = try await queue.enqueue(
            contentsOf: try (0..<20).map { try JobRequest(SumExecutor.self, .init(a: $0, b: 1)) })
        let dependent = try await queue.enqueue(SumExecutor.self, .init(a: 5, b: 5), options: .init(after: [first.id]))
        try await queue.setLimits(QueueLimits(concurrency: 1), for: "limited")
        let limited = try await queue.enqueue(
            contentsOf: try (0..<5).map {
                try JobRequest(SumExecutor.self, .init(a: $0, b: 0), options: .init(queue: "limited"))
            })
        let workflow = try await queue.submit(
            try Workflow {
                try WorkflowStep(executor: "sum", payloadJSON: #"{"a":1,"b":1}"#, options: .init(name: "one"))
                try WorkflowStep(executor: "sum", payloadJSON: #"{"a":2,"b":2}"#, options: .init(name: "two"))
            })
        _ = try await work(queue, queues: ["default", "limited"])
        for job in [first] + batch + [dependent] + limited {
            let stored = try #require(try await queue.job(job.id))
            #expect(stored.state == .succeeded && stored.attempt == 1, "\(stored)")
        }
        #expect(try await queue.job(first.id)?.resultJSON == #"{"sum":3}"#)
        #expect(try await queue.workflow(workflow)?.state == .succeeded)
        // The feed: each job enqueued, started and succeeded, in that order, once.
        var kinds: [JobID: [EventKind]] = [:]
        for event in try await queue.events(after: 0, limit: 1000) {
            if let id = event.jobID { kinds[id, default: []].append(event.kind) }
        }
        #expect(kinds[first.id] == [.enqueued, .started, .succeeded])
        #expect(kinds[dependent.id] == [.enqueued, .started, .succeeded])
        // The cleaner deletes what its retention lets go.
        try await queue.setRetention(QueueRetention(succeeded: .milliseconds(1)), for: "limited")
        try await Task.sleep(for: .milliseconds(20))
        let cleaned = try await queue.clean()
        #expect(cleaned.jobs == limited.count, "\(cleaned)")
        #expect(try await queue.job(limited[0].id) == nil)
    }

    /// Values at the edges go through the pooler as they go direct: a payload of nearly 1 MiB
    /// and back, an error text holding NUL characters (kept as U+FFFD); and
    /// a SQLite store copied into the database through the pooler is checked equal.
    @Test func largeAndOddValuesAndACopyGoThroughThePooler() async throws {
        guard let (_, pooled) = try await Self.throughPooler() else { return }
        let queue = try await JobQueue(postgres: pooled, logger: PostgresTestServer.logger)
        let blob = String(repeating: "é", count: (1 << 19) - 40)
        let big = try await queue.enqueue(try JobRequest(executor: "echo", payloadJSON: #"{"blob": "\#(blob)"}"#))
        let odd = try await queue.enqueue(
            try JobRequest(executor: NulFailure.name, payloadJSON: "{}", options: .init(maxAttempts: 1)))
        _ = try await work(queue, executors: BuiltinExecutors.all + [NulFailure()])
        let echoed = try #require(try await queue.job(big.id))
        #expect(echoed.state == .succeeded && echoed.resultJSON?.utf8.count ?? 0 > 1_000_000)
        let failed = try #require(try await queue.job(odd.id))
        #expect(failed.state == .dead && failed.error?.contains("bad\u{FFFD}byte\u{FFFD}") == true, "\(failed)")

        let store = try TemporaryStore()
        let source = try JobQueue(path: store.path)
        _ = try await source.enqueue(
            contentsOf: try (0..<500).map { try JobRequest(SumExecutor.self, .init(a: $0, b: 1)) })
        _ = try await work(source)
        _ = try await source.enqueue(try JobRequest(executor: "echo", payloadJSON: #"{"blob": "\#(blob)"}"#))
        guard let (_, empty) = try await Self.throughPooler() else { return }
        let destination = try await JobQueue(postgres: empty, logger: PostgresTestServer.logger)
        let report = try await source.copy(to: destination)
        #expect(report.verified, "\(report.tables.filter { !$0.matches })")
        #expect(try await destination.count(where: .all) == 501)
        _ = try await work(destination)
        #expect(try await destination.count(where: try JobFilter("state:succeeded")) == 501)
    }

    /// LISTEN needs a session, which transaction pooling does not keep: the probe finds that
    /// notifications do not arrive, an idle worker says so once and finds new work by its poll
    /// (about a second) instead.
    @Test func anIdleWorkerBehindThePoolerFindsNewWorkByItsPoll() async throws {
        guard let (_, pooled) = try await Self.throughPooler() else { return }
        let (log, producer, running) = try await Self.idleWorker(worker: pooled, producer: pooled)
        defer { running.cancel() }
        try await eventually(.seconds(10), "the worker to find that notifications do not arrive") {
            log.messages.contains { $0.contains("notifications do not arrive") }
        }
        for round in 0..<3 {
            let job = try await producer.enqueue(SumExecutor.self, .init(a: round, b: 1))
            let start = ContinuousClock.now
            try await eventually(.seconds(30), "job \(round) to run") {
                try await producer.job(job.id)?.state == .succeeded
            }
            // About a second; more on a loaded machine.
            #expect(ContinuousClock.now - start < .seconds(10), "found by the poll")
        }
        #expect(log.messages.filter { $0.contains("notifications do not arrive") }.count == 1)
        running.cancel()
        _ = try await within(.seconds(20), "the pool to stop") { try? await running.value }
    }

    /// With `listen_host`/`listen_port` naming the server itself, the LISTEN connection goes
    /// around the pooler: notifications arrive (no warning) and an idle worker behind the pooler
    /// starts each new job at once, well inside its 1 s poll.
    @Test func aDirectListenConnectionWakesAWorkerBehindThePooler() async throws {
        guard let (direct, pooled) = try await Self.throughPooler() else { return }
        var listening = pooled
        listening.listenHost = direct.host
        listening.listenPort = direct.port
        #expect(try PostgresSettings(url: listening.description) == listening, "\(listening)")
        let (log, producer, running) = try await Self.idleWorker(worker: listening, producer: pooled)
        defer { running.cancel() }
        // The first job waits for the worker to start and listen.
        let warmUp = try await producer.enqueue(SumExecutor.self, .init(a: 0, b: 0))
        try await eventually(.seconds(10), "the worker to start") {
            try await producer.job(warmUp.id)?.state == .succeeded
        }
        try await Task.sleep(for: .milliseconds(1500))  // the probe's second, and idle
        var waits: [Duration] = []
        for round in 0..<5 {
            let job = try await producer.enqueue(SumExecutor.self, .init(a: round, b: 1))
            let start = ContinuousClock.now
            try await eventually(.seconds(10), "job \(round) to run") {
                try await producer.job(job.id)?.state == .succeeded
            }
            waits.append(ContinuousClock.now - start)
            try await Task.sleep(for: .milliseconds(Int.random(in: 100...400)))
        }
        // Woken by the notification: most of them far inside the poll's second.
        #expect(waits.sorted()[2] < .milliseconds(300), "median wait \(waits.sorted()[2]) of \(waits)")
        #expect(!log.messages.contains { $0.contains("notifications do not arrive") }, "\(log.messages)")
        running.cancel()
        _ = try await within(.seconds(20), "the pool to stop") { try? await running.value }
    }
}

/// Fails with an error whose text holds NUL characters (a C library's message, say).
private struct NulFailure: Executor {
    static let name = "nul-failure"
    struct Input: Codable, Sendable {}
    struct Output: Codable, Sendable {}
    func run(_ input: Input, context: JobContext) async throws -> Output {
        throw ExecutorFailure("bad\u{0}byte\u{0}")
    }
}
