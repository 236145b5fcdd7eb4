import Foundation
import JobQ
import JobQPostgres
import Logging

/// Durable functions under the kills: worker processes of the run's own (`jobq-chaos
/// function-worker --db DB`), killed and restarted with the `jobq work` ones. Each function
/// records a step, sleeps a few hundred milliseconds (its slot given back), records another,
/// waits for its `go` signal (sent by the run at a random moment, often before the wait is
/// reached), waits for the `chaos.paid` event of its batch (emitted every second by each
/// function worker, killed with it), calls a `sum` job (run by the `jobq work` workers) and records a last
/// step. The checks: every function succeeded with the right result, its record holds exactly
/// its seven positions in order, its one signal was taken once, and it finished once.
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
        struct Input: Codable, Sendable { var n: Int }
        struct Output: Codable, Sendable, Equatable {
            var charge: Int
            var go: Int
            var batch: Int
            var total: Int
        }
        struct Paid: Codable, Sendable { var batch: Int }

        func run(_ input: Input, context: JobContext) async throws -> Output {
            let charge = try await context.step("charge") { input.n * 2 }
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
            let total = try await context.step("ship") { () -> Int in
                if case .integer(let value) = sum.sum { return Int(value) }
                throw NonRetryableError("sum returned \(sum.sum)")
            }
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

    /// Runs a worker pool of the functions until killed.
    static func runWorker(db: String) async throws {
        let logger = Logger(label: "chaos.functions")
        let jobs =
            db.hasPrefix("postgres")
            ? try await JobQueue(postgres: try PostgresSettings(url: db), logger: logger) : try JobQueue(path: db)
        var options = WorkerPool.Options()
        options.lease = .seconds(1)
        options.pollInterval = .milliseconds(100)
        options.stopWhen = .never
        let pool = WorkerPool(queue: jobs, queues: [queue], concurrency: 4, executors: [Order()], options: options)
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
