import Foundation
import GRDB
import JobQ
import JobQPostgres
import Logging
import PostgresNIO
import Synchronization

/// Durable functions under the kills: worker processes of the run's own (`jobq-chaos
/// function-worker --db DB`), killed and restarted with the `jobq work` ones. Each function
/// records a step (committed with a row of the application's table, ``ChaosFunctionRows``), sleeps a few hundred milliseconds (its slot given back), records another,
/// waits for its `go` signal (sent by the run at a random moment, often before the wait is
/// reached), waits for the `chaos.paid` event of its batch (emitted every second by each
/// function worker, killed with it), calls a `sum` job (run by the `jobq work` workers) and records a last
/// step (committed with another row). The checks: every function succeeded with the right
/// result, its record holds exactly its seven positions in order, its one signal was taken
/// once, it finished once, and each of its two committed steps left exactly one row.
enum ChaosFunctions {
    static let queue = "chaos-functions"
    /// The batches of `chaos.paid` events: each function waits for its own batch's.
    static let batches = 4
    /// The record every function ends with: (kind, name) by position.
    static let record: [(kind: String, name: String)] = [
        ("step", "charge"), ("sleep", "sleep"), ("step", "pack"), ("signal", "go"), ("event", "chaos.paid"),
        ("call", "call sum"), ("step", "ship")
    ]

    struct Order: Executor {
        static let name = "chaos-order"
        let rows: ChaosFunctionRows
        struct Input: Codable, Sendable { var n: Int }
        struct Output: Codable, Sendable, Equatable {
            var charge: Int
            var go: Int
            var batch: Int
            var total: Int
        }
        struct Paid: Codable, Sendable { var batch: Int }

        func run(_ input: Input, context: JobContext) async throws -> Output {
            let charge = try await rows.step(context, "charge", n: input.n, value: input.n * 2)
            try await context.sleep(for: .milliseconds(Int64(200 + input.n % 3 * 100)))
            let packed = try await context.step("pack") { charge + 1 }
            guard let go = try await context.waitForSignal("go", as: Int.self, timeout: .seconds(300)) else {
                throw NonRetryableError("no go signal within five minutes")
            }
            guard
                let paid = try await context.waitForEvent(
                    "chaos.paid", where: "/batch = \(Self.batch(input.n))", as: Paid.self, timeout: .seconds(300))
            else { throw NonRetryableError("no chaos.paid event of batch \(Self.batch(input.n)) within five minutes") }
            let sum = try await context.call(
                SumExecutor.self, .init(a: packed, b: go), options: JobOptions(maxAttempts: 10))
            guard case .integer(let shipped) = sum.sum else { throw NonRetryableError("sum returned \(sum.sum)") }
            let total = try await rows.step(context, "ship", n: input.n, value: Int(shipped))
            return Output(charge: charge, go: go, batch: paid.batch, total: total)
        }

        /// The batch whose `chaos.paid` event function `n` waits for.
        static func batch(_ n: Int) -> Int { n % ChaosFunctions.batches }

        /// What function `n` returns when it receives its signal (`n + 1000`).
        static func expected(_ n: Int) -> Output {
            Output(charge: 2 * n, go: n + 1000, batch: batch(n), total: 2 * n + 1 + n + 1000)
        }
    }

    /// The job lines of `count` functions. Forty attempts: the function workers are killed every
    /// other round, a second or so after they start, and each kill of a run costs its attempt.
    static func jobLines(_ count: Int) -> String {
        (0..<count).map {
            #"{"executor": "\#(Order.name)", "payload": {"n": \#($0)}, "queue": "\#(queue)", "maxAttempts": 40}"#
        }
        .joined(separator: "\n")
    }

    /// Runs a worker pool of the functions until killed; `locks` as for the application
    /// producers (``AppProducer``).
    static func runWorker(db: String, locks: String?) async throws {
        let logger = Logger(label: "chaos.functions")
        let jobs =
            db.hasPrefix("postgres")
            ? try await JobQueue(postgres: try PostgresSettings(url: db), logger: logger) : try JobQueue(path: db)
        let rows = try ChaosFunctionRows(db: db, locks: locks)
        var options = WorkerPool.Options()
        options.lease = .seconds(1)
        options.pollInterval = .milliseconds(100)
        options.stopWhen = .never
        let pool = WorkerPool(
            queue: jobs, queues: [queue], concurrency: 4, executors: [Order(rows: rows)], options: options)
        // A function takes the first emit of its batch's event after its wait began (an event
        // is not kept for a wait to come): the emits go on as long as the worker runs.
        let payer = Task {
            while !Task.isCancelled {
                for batch in 0..<batches {
                    _ = try? await jobs.emit("chaos.paid", payloadJSON: #"{"batch": \#(batch)}"#)
                }
                try? await Task.sleep(for: .seconds(1))
            }
        }
        defer { payer.cancel() }
        try await pool.run()
    }
}

/// The application's table the functions' committed steps (`JobContext.step(_:in:_:)`) append
/// to, a row per step committed with its record: one row per function and step, whatever was
/// killed when.
final class ChaosFunctionRows: Sendable {
    static let table = "chaos_function_rows"

    /// The table, created by the chaos run before any function worker starts.
    static func createTable(postgres: Bool) -> String {
        postgres
            ? "CREATE TABLE public.\(table) (n bigint NOT NULL, step text NOT NULL)"
            : "CREATE TABLE \(table) (n INTEGER NOT NULL, step TEXT NOT NULL)"
    }

    private enum Target {
        case sqlite(DatabasePool)
        case postgres(PostgresConnector)
    }

    private let target: Target
    /// The restarts' lock files (see ``AppProducer``): a step's transaction runs between two.
    private let locks: (gate: Int32, running: Int32)?
    private let idle = Mutex<[PostgresConnection]>([])
    private let logger = Logger(label: "chaos.functions")

    init(db: String, locks: String?) throws {
        if db.hasPrefix("postgres") {
            target = .postgres(PostgresConnector(settings: try PostgresSettings(url: db), logger: logger))
        } else {
            var configuration = Configuration()
            configuration.busyMode = .timeout(10)
            target = .sqlite(try DatabasePool(path: db, configuration: configuration))
        }
        self.locks = locks.map { paths in
            let parts = paths.split(separator: ":").map(String.init)
            return (open(parts[0], O_RDWR | O_CREAT, 0o644), open(parts[1], O_RDWR | O_CREAT, 0o644))
        }
    }

    /// Step `name` of function `n`: appends its row and returns `value`, committed with the
    /// step's record.
    func step(_ context: JobContext, _ name: String, n: Int, value: Int) async throws -> Int {
        switch target {
        case .sqlite(let pool):
            return try await context.step(name, in: pool) { db -> Int in
                try db.execute(sql: "INSERT INTO \(Self.table) (n, step) VALUES (?, ?)", arguments: [n, name])
                return value
            }
        case .postgres(let connector):
            await betweenRestarts()
            defer { if let locks { flock(locks.running, LOCK_UN) } }
            let connection: PostgresConnection
            if let kept = idle.withLock({ $0.popLast() }) {
                connection = kept
            } else {
                connection = try await connector.connect()
            }
            do {
                let logger = self.logger
                let result = try await context.step(name, in: connection) { connection -> Int in
                    try await connection.query(
                        "INSERT INTO public.chaos_function_rows (n, step) VALUES (\(n), \(name))", logger: logger)
                    return value
                }
                idle.withLock { $0.append(connection) }
                return result
            } catch {
                if connection.isClosed {
                    try? await connection.close()
                } else {
                    idle.withLock { $0.append(connection) }
                }
                throw error
            }
        }
    }

    /// Waits (off the concurrency threads) until no restart is under way, and holds it off
    /// until the step's transaction ends: postgres-nio leaves a query sent as the server
    /// closes its connection unanswered for good.
    private func betweenRestarts() async {
        guard let locks else { return }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            DispatchQueue.global().async {
                flock(locks.gate, LOCK_EX)
                flock(locks.gate, LOCK_UN)
                flock(locks.running, LOCK_SH)
                continuation.resume()
            }
        }
    }
}
