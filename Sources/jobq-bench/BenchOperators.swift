import Foundation
import JobQ
import JobQCommandLine
import Synchronization

/// What operators' tools cost: pick-up latency while a bulk retry runs beside the workers, and
/// a search by payload member with and without its index.
extension BenchWorkloads {
    struct BulkRetryLatency {
        /// Round trips (ms) sampled while the bulk retry ran, and on the same store without it.
        var during: [Double]
        var quiet: [Double]
        /// Whether the retry still had jobs left when the last sample was taken.
        var overlapped: Bool
        /// Jobs the retry changed per second, start to exit.
        var retriedPerSecond: Double
    }

    /// Pick-up latency across processes (as ``latency(_:crossProcess:path:workerArguments:ready:)``)
    /// while `jobq retry --where 'queue:bulk'` makes `dead` dead jobs of another queue ready in a
    /// third process, against the same store with nothing else running.
    mutating func latencyBesideBulkRetry(_ count: Int, dead: Int) async throws -> BulkRetryLatency {
        func store() throws -> String {
            let path = freshPath()
            _ = try open(path)
            try rawStore(path).fill(count: dead, state: "dead", runAtOffset: -3600, queue: "bulk")
            return path
        }
        let quiet = try await latency(count, crossProcess: true, path: try store())
        let path = try store()
        let queue = try open(path)
        let arguments = ["--db", path] + workerFlags + ["retry", "--where", "queue:bulk"]
        let run = Mutex<(child: BenchChild?, started: ContinuousClock.Instant)>((nil, .now))
        let during = try await latency(count, crossProcess: true, path: path) {
            // Started once the worker is up; the samples start once it has committed a batch.
            let child = try BenchChild(arguments)
            run.withLock { $0 = (child, .now) }
            let deadline = ContinuousClock.now + .seconds(60)
            while ContinuousClock.now < deadline {
                if try await queue.count(where: JobFilter("queue:bulk state:ready")) > 0 { return }
                try await Task.sleep(for: .milliseconds(5))
            }
            throw CLIError.failure("bench: the bulk retry changed nothing within 60s")
        }
        let left = try await queue.count(where: JobFilter("queue:bulk state:dead"))
        let (child, started) = run.withLock { $0 }
        guard let retry = child else { throw CLIError.failure("bench: the bulk retry never started") }
        let (status, _) = await retry.wait()
        guard status == 0 else { throw CLIError.failure("bench: `jobq retry --where` exited \(status)") }
        let elapsed = (ContinuousClock.now - started).inSeconds
        return BulkRetryLatency(
            during: during.roundTrip, quiet: quiet.roundTrip, overlapped: left > 0,
            retriedPerSecond: Double(dead) / elapsed)
    }

    /// Milliseconds to read a day of history in 96 buckets (what the dashboard's 24h charts
    /// read) from a store of `jobs` finished jobs holding a day of minutes of `queues` queues
    /// and 3 executors each, with a backlog sample every minute: the median of 5 reads.
    mutating func readDayOfHistory(jobs: Int, queues: Int) async throws -> Double {
        let path = freshPath()
        let queue = try open(path)
        let raw = try rawStore(path)
        for index in 0..<queues {
            try raw.fill(count: jobs / queues, state: "succeeded", runAtOffset: -3600, queue: "q\(index)")
        }
        let now = Int64(Date().timeIntervalSince1970 / 60)
        let ranges = """
            WITH RECURSIVE m(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM m WHERE i < 1439),
            q(j) AS (SELECT 0 UNION ALL SELECT j + 1 FROM q WHERE j < \(queues - 1))
            """
        try raw.exec("BEGIN IMMEDIATE")
        try raw.exec(
            """
            \(ranges), e(k) AS (SELECT 0 UNION ALL SELECT k + 1 FROM e WHERE k < 2)
            INSERT INTO jobq_history (minute, queue, executor, succeeded, retried, dead, waits, runs, wait_max, run_max)
            SELECT \(now) - i, 'q' || j, 'e' || k, 40, 1, 1, '[0,0,0,0,0,3,10,20,5,2]', '[0,0,0,1,5,20,10,4]', 0.02, 0.01
            FROM m, q, e
            """)
        try raw.exec(
            """
            \(ranges), s(state) AS (VALUES ('waiting'), ('scheduled'), ('ready'), ('running'))
            INSERT INTO jobq_backlog_history (minute, queue, state, jobs) SELECT \(now) - i, 'q' || j, state, 100 FROM m, q, s
            """)
        try raw.exec("COMMIT")
        var samples: [Double] = []
        for _ in 0..<5 {
            let start = ContinuousClock.now
            let history = try await queue.history(over: .seconds(86_400), buckets: 96)
            samples.append((ContinuousClock.now - start).inSeconds * 1000)
            guard history.buckets.map(\.succeeded).reduce(0, +) > 0 else {
                throw CLIError.failure("bench: the day of history read back empty")
            }
        }
        return percentile(samples, 50)
    }

    /// Milliseconds to count the jobs of one customer in 1,000 among `jobs` (`/customer = "c7"`),
    /// without an index on `/customer` and with one: the median of 5 counts each.
    mutating func findByPayloadMember(jobs: Int) async throws -> (withoutIndex: Double, withIndex: Double) {
        let path = freshPath()
        let queue = try open(path)
        try rawStore(path).fill(
            count: jobs, state: "succeeded", runAtOffset: -3600,
            payload: #"'{"a":' || i || ',"b":1,"customer":"c' || (i % 1000) || '"}'"#)
        let filter = try JobFilter(#"/customer = "c7""#)
        let expected = jobs >= 7 ? (jobs - 7) / 1000 + 1 : 0
        func timed() async throws -> Double {
            var samples: [Double] = []
            for _ in 0..<5 {
                let start = ContinuousClock.now
                let found = try await queue.count(where: filter)
                samples.append((ContinuousClock.now - start).inSeconds * 1000)
                guard found == expected else {
                    throw CLIError.failure("bench: counted \(found) jobs of customer c7, expected \(expected)")
                }
            }
            return percentile(samples, 50)
        }
        let without = try await timed()
        try await queue.addPayloadIndex("/customer")
        return (without, try await timed())
    }
}
