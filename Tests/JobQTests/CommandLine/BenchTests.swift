import Foundation
import Testing

/// `jobq-bench` runs every workload and reports each figure (numbers are not asserted: speed is
/// measured by the bench, not by tests).
@Suite("jobq-bench")
struct BenchTests {
    @Test func benchReportsEveryWorkloadWithItsBaseline() async throws {
        let result = try await CLI.run(
            [
                "--quick", "--json", "--enqueue-jobs", "50", "--bulk-jobs", "1000", "--drain-jobs", "200",
                "--latency-jobs", "5", "--finished-jobs", "2000", "--future-jobs", "200", "--memory-backlog", "2000",
                "--memory-jobs", "100", "--group-members", "100", "--sequence-steps", "20", "--tree-fan-out", "5",
                "--idle-seconds", "1"
            ], db: nil, executable: CLI.benchBinary)
        #expect(result.status == 0, "\(result.stderr)")
        let report = try BenchReport(result.stdout)
        let names = report.results.map(\.workload)
        for expected in [
            "enqueue, one per transaction", "enqueue, bulk (batches of 1,000)", "drain in-process, concurrency 1",
            "drain in-process, concurrency 4", "drain through `jobq work` (concurrency 4)", "latency in-process p50",
            "enqueue in the app's transaction (GRDB: its row + the job)",
            "latency across processes p99"
        ] {
            #expect(names.contains(expected), "missing \(expected)")
        }
        #expect(names.contains { $0.hasPrefix("claim throughput") })
        #expect(names.contains { $0.hasPrefix("peak RSS") })
        // The tree event is written by the transaction of the last leaf: 0 ms is the expected figure.
        let treeEvent = "the tree's last leaf to its tree event"
        // An idle worker may well use no measurable CPU in a second (the kernel counts 10ms ticks).
        // The enqueue's CPU in the app's transaction is a difference of two runs' CPU per
        // transaction: at 50 transactions the machine's noise may make it anything.
        let appEnqueueCPU = "CPU per job of the enqueue in the app's transaction (above the app's own)"
        let mayBeZero = [
            treeEvent, "CPU of an idle `jobq work` over 1s", "CPU of an idle `jobq work` beside 500 sleeping functions",
            appEnqueueCPU
        ]
        #expect(
            report.results.filter { !mayBeZero.contains($0.workload) }.allSatisfy { $0.value > 0 && $0.value.isFinite })
        #expect(report.results.first { $0.workload == appEnqueueCPU }?.value.isFinite == true)
        for cpu in [
            "CPU per job: drain in-process, concurrency 1 (this process)",
            "CPU per job: drain in-process, concurrency 4 (this process)",
            "CPU per job: drain through `jobq work` (the worker process, start-up included)"
        ] {
            let row = report.results.first { $0.workload == cpu }
            #expect(row?.unit == "us/job" && row?.ratio != nil, "missing \(cpu)")
        }
        #expect(names.contains("enqueue 100 jobs in one app transaction (GRDB: its row + 100 jobs)"))
        #expect(names.contains("enqueue through the HTTP API, one job per POST (keep-alive, loopback)"))
        #expect(names.contains { $0.hasPrefix("history: a day in 96 buckets (the dashboard's 24h charts)") })
        #expect(report.results.first { $0.workload == treeEvent }?.value == 0)
        #expect(names.contains("raw claim+complete, batches of 100, no event rows"))
        #expect(names.contains("drain a parallel group of 100 steps (concurrency 4)"))
        #expect(names.contains("drain through `jobq work`, queue limited to 1000000 at once (never binds)"))
        #expect(names.contains("a sequence of 20 steps, one hand-off each"))
        #expect(names.contains("durable functions of 10 steps (100, concurrency 4)"))
        #expect(names.contains("a signal to its parked function's success p50"))
        #expect(names.contains("a tree of 1 -> 5 -> 25 jobs, end to end (concurrency 4)"))
        #expect(names.contains("bulk retry beside a worker, `jobq retry --where` start to exit"))
        #expect(
            names.contains { $0.hasPrefix("latency across processes p99 beside `jobq retry --where` of 200 dead jobs") }
        )
        #expect(names.contains("count by payload member (/customer, 1 in 1,000 of 400 jobs), with its index"))
        #if os(Linux)
            // 24 throughput ratios (four the enqueue in the application's transaction: one job and
            // 100 against the application's transaction alone, the job's row by the application's
            // own INSERT against it, and the enqueue against that row; one a durable function's steps; one an enqueue through the HTTP API against the
            // in-process one; one a drain recording the history against one recording none), 5 CPU
            // per job ratios (the app transaction's enqueue, four drains, one of them recording no
            // history), 2 latency ratios to the minimal raw queue across processes,
            // 1 beside the cleaner, 1 beside a bulk retry, 1 for a count by payload member with
            // its index against without, a signal's wake-up (to its function's success, and to
            // its function taking it) against a new job's pick-up, and an idle worker's memory
            // beside sleeping functions against none.
            #expect(
                report.results.filter { $0.ratio != nil }.count == 37,
                "every throughput figure has a ratio to its baseline")
            for latencyLimit in [
                "minimal raw queue round trip across processes, p50", "minimal raw queue one way across processes, p50",
                "latency across processes p50, vs the minimal raw queue",
                "enqueue to done in the worker p50, vs the minimal raw queue"
            ] {
                #expect(names.contains(latencyLimit), "missing \(latencyLimit)")
            }
        #else
            #expect(
                report.results.filter { $0.ratio != nil }.count == 23,
                "every throughput figure has a ratio to its baseline")
        #endif
        // The physical limit beside jobq: the minimal raw queue, and jobq's figures against it.
        #expect(names.contains("minimal raw queue: single-insert commits"))
        #expect(names.contains("minimal raw queue: claim+complete, batches of 100"))
        #expect(names.contains("drain through `jobq work`, vs the minimal raw queue"))
        #if os(Linux)
            let idle = try #require(report.results.first { $0.workload == "CPU of an idle `jobq work` over 1s" })
            #expect(idle.unit == "% of a core" && idle.value >= 0 && idle.value < 100)
        #endif
    }

    @Test func breakdownTakesTheDistanceToTheMinimalQueueApart() async throws {
        let result = try await CLI.run(
            ["--breakdown", "--json", "--enqueue-jobs", "50", "--drain-jobs", "300"], db: nil,
            executable: CLI.benchBinary)
        #expect(result.status == 0, "\(result.stderr)")
        let rows = try BenchReport(result.stdout).results
        let names = rows.map { $0.workload.trimmingCharacters(in: .whitespaces) }
        for expected in [
            "minimal raw queue: single-insert commits", "jobq's statements raw, single-insert commits",
            "without the enqueued event (its data in the job row)",
            "jobq: enqueue, one per transaction", "jobq's statements raw, claim+complete in batches of 100",
            "without event rows",
            "without the stored result", "without the jobs_leases index", "without the jobs_finished index",
            "without the events_job index",
            "without all five", "jobq: drain in-process, concurrency 1"
        ] {
            #expect(names.contains(expected), "missing \(expected)")
        }
        #expect(rows.allSatisfy { $0.value > 0 && $0.value.isFinite })
        #expect(
            rows.filter { $0.ratio != nil }.count == rows.count - 2, "every row but the two minimal ones is a ratio")
    }

    /// `jobq-bench --db`: each drain's rows include what a job cost the worker processes and,
    /// the test server being on this machine, the server, each beside the minimal queue's.
    /// Runs alone (``RunsAlone``): its drains start up to four worker processes.
    @Test(RunsAlone.trait, .enabled(if: PostgresTestServer.available, PostgresTestServer.skipReason))
    func theBenchOnPostgresReportsWhatEachJobCostTheWorkersAndTheServer() async throws {
        try await PostgresTestServer.withFreshDatabase { settings in
            let serverURL = try #require(PostgresTestServer.url)
            var url = try #require(URLComponents(string: serverURL))
            url.path = "/" + settings.database
            let databaseURL = try #require(url.string)
            // 3,000 jobs a drain: the server's CPU is read in clock ticks (10 ms), and the minimal
            // queue's drain of 300 once took less than one.
            let result = try await CLI.run(
                [
                    "--quick", "--json", "--db", databaseURL, "--round-trip-ms", "0", "--enqueue-jobs",
                    "50", "--bulk-jobs", "1000", "--drain-jobs", "3000", "--latency-jobs", "5", "--finished-jobs",
                    "2000"
                ], db: nil, executable: CLI.benchBinary)
            #expect(result.status == 0, "\(result.stderr)")
            let rows = try BenchReport(result.stdout).results
            for processes in [1, 2, 4] {
                for part in ["the workers (start-up included)", "the server"] {
                    let name = "PostgreSQL: CPU per job: drain with \(processes) `jobq work` process(es), \(part)"
                    let row = try #require(rows.first { $0.workload == name }, "missing \(name)")
                    #expect(row.unit == "us/job" && row.value > 0 && row.value.isFinite, "\(name): \(row.value)")
                    #expect(row.baselineValue.map { $0 > 0 } == true && row.ratio != nil, "\(name) has no baseline")
                }
            }
        }
    }

    @Test func badSizesAreRefused() async throws {
        let result = try await CLI.run(["--drain-jobs", "0"], db: nil, executable: CLI.benchBinary)
        #expect(result.status == 2)
        #expect(result.stderr.contains("at least 1"))
    }

    /// The shipped `jobq` carries no bench: `jobq --help` does not list it and `jobq bench`
    /// is an unknown command; `jobq-bench --help` explains itself.
    @Test func theBenchIsItsOwnExecutable() async throws {
        let help = try await CLI.run(["--help"], db: nil)
        #expect(help.status == 0)
        #expect(!help.stdout.contains("bench"), "\(help.stdout)")
        let old = try await CLI.run(["bench", "--quick"], db: nil)
        #expect(old.status == 2)
        let benchHelp = try await CLI.run(["--help"], db: nil, executable: CLI.benchBinary)
        #expect(benchHelp.status == 0)
        #expect(benchHelp.stdout.contains("USAGE: jobq-bench"))
        #expect(benchHelp.stdout.contains("--jobq <path>"))
    }

    /// Without a `jobq` to run as a worker, the cross-process workloads stop with an error that
    /// says how to get one, before measuring anything.
    @Test func aMissingJobqIsAClearError() async throws {
        let result = try await CLI.run(
            [
                "--quick", "--jobq", "/nonexistent/jobq", "--enqueue-jobs", "20", "--bulk-jobs", "100", "--drain-jobs",
                "50"
            ], db: nil,
            executable: CLI.benchBinary)
        #expect(result.status == 2)
        #expect(result.stderr.contains("--jobq /nonexistent/jobq: not an executable file"), "\(result.stderr)")
    }
}

/// What `jobq-bench --json` prints: one row per figure.
struct BenchReport: Decodable {
    struct Row: Decodable {
        var workload: String
        var value: Double
        var unit: String
        var baselineValue: Double?
        var ratio: Double?
    }
    var results: [Row]

    init(_ json: String) throws { self = try JSONDecoder().decode(Self.self, from: Data(json.utf8)) }
}
