import ArgumentParser
import Foundation
import JobQ
import JobQCommandLine
import Logging

struct DemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Enqueue a few hundred mixed jobs on a fresh store and work them, then summarize.",
        discussion: helpText(
            """
            The mix: sums, echoes, short sleeps, shell commands, jobs delayed by a second or two,
            jobs that fail once and succeed on retry, and jobs that fail until they are dead; and a
            small workflow: a sum, then three steps in parallel, then one that gets their results.
            The store is a new file in the temporary directory unless --db is given; it is kept,
            so you can look at it afterwards with `jobq --db PATH list`.
            """)
    )

    @Option(
        help: ArgumentHelp(
            "Store file for the demo (must not exist yet). Default: a new temporary file.", valueName: "path"))
    var db: String?

    @Option(help: "How many jobs to enqueue.")
    var jobs: Int = 300

    @Option(help: "Jobs run at once.")
    var concurrency: Int = 8

    func run() async throws {
        guard (1...1_000_000).contains(jobs) else {
            throw CLIError.usage("--jobs must be from 1 to 1000000, got \(jobs)")
        }
        guard (1...1024).contains(concurrency) else {
            throw CLIError.usage("--concurrency must be from 1 to 1024, got \(concurrency)")
        }
        let path =
            db
            ?? FileManager.default.temporaryDirectory
            .appendingPathComponent("jobq-demo-\(UUID().uuidString.prefix(8).lowercased()).sqlite").path
        guard !FileManager.default.fileExists(atPath: path) else {
            throw CLIError.usage(
                "\(path) already exists; the demo needs a fresh store (omit --db to use a temporary file)")
        }
        CLILogging.bootstrap
        let queue = try JobQueue(path: path)
        print("demo store: \(path)")

        let requests = try DemoJobs.make(count: jobs)
        let started = ContinuousClock.now
        try await queue.enqueue(contentsOf: requests)
        print("enqueued \(requests.count) jobs: \(DemoJobs.describe(requests))")
        let workflow = try await queue.submit(try DemoJobs.workflow())
        print(
            "submitted workflow \(workflow): a sum, then a parallel group of three, then a step that gets their results"
        )

        var options = WorkerPool.Options()
        options.retryBackoff = RetryBackoff(base: .milliseconds(200), maximum: .seconds(2))
        options.stopWhen = .allJobsFinished
        options.pollInterval = .milliseconds(20)
        // Retries and dead jobs are part of the show; keep their log lines out of the way.
        var logger = Logger(label: "jobq.demo")
        logger.logLevel = .error
        let pool = WorkerPool(
            queue: queue, queues: [JobOptions.defaultQueue], concurrency: concurrency,
            executors: BuiltinExecutors.all, options: options, logger: logger)
        try await runPool(pool, logger: logger)

        let elapsed = (ContinuousClock.now - started).inSeconds
        let status = try await queue.status()
        let counts = status.queues.first?.counts ?? [:]
        print("")
        print("summary after \(String(format: "%.1f", elapsed))s:")
        for state in JobState.allCases where (counts[state.rawValue] ?? 0) > 0 {
            print(
                "  \(state.rawValue.padding(toLength: 10, withPad: " ", startingAt: 0)) \(counts[state.rawValue] ?? 0)")
        }
        let retried = try await queue.jobs(state: .succeeded, limit: Int.max).filter { $0.attempt > 1 }.count
        print("  \(retried) job(s) succeeded after a retry")
        if let sum = try await queue.jobs(state: .succeeded, limit: Int.max).first(where: { $0.executor == "sum" }) {
            print("  e.g. job \(sum.id): sum \(sum.payloadJSON) -> \(sum.resultJSON ?? "null")")
        }
        if let dead = try await queue.jobs(state: .dead, limit: 1).first {
            print("  e.g. job \(dead.id): dead after \(dead.attempt) attempts: \(dead.error ?? "")")
        }
        if let status = try await queue.workflow(workflow) {
            print("  workflow \(workflow) \(status.state.rawValue): \(status.jobs.count) steps")
        }
        print("")
        // Commands that work from here: `jobq` is not on PATH after `swift run jobq demo`.
        let jobq = "\(InvocationHint.command) --db \(InvocationHint.quoted(path))"
        print("look around:  \(jobq) status")
        print("              \(jobq) list --state dead")
        print("              \(jobq) workflow show \(workflow)")
        if InvocationHint.command != "jobq" {
            print(
                "install jobq: swift build -c release, then copy .build/release/jobq (the Operations article, \"Installing the command line\")"
            )
        }
        let unfinished = JobState.allCases.filter { !$0.isFinal }.reduce(0) { $0 + (counts[$1.rawValue] ?? 0) }
        if unfinished > 0 {
            throw CLIError.failure("\(unfinished) job(s) did not finish")
        }
    }
}

/// The demo's job mix, deterministic for a given count.
enum DemoJobs {
    static func make(count: Int) throws -> [JobRequest] {
        var generator = SplitMix64(seed: 42)
        return try (0..<count).map { index in
            let priority = Int(generator.next() % 4)
            switch index % 25 {
            case 0...9:
                let a = Int(generator.next() % 1000)
                let b = Int(generator.next() % 1000)
                return try JobRequest(SumExecutor.self, .init(a: a, b: b), options: .init(priority: priority))
            case 10...13:
                return try JobRequest(
                    executor: "echo", payloadJSON: #"{"greeting":"hello","n":\#(index)}"#,
                    options: .init(priority: priority))
            case 14...17:
                let seconds = Double(generator.next() % 150 + 10) / 1000
                return try JobRequest(SleepExecutor.self, .init(seconds: seconds), options: .init(priority: priority))
            case 18, 19:
                return try JobRequest(
                    ShellExecutor.self, .init(argv: ["echo", "job \(index)"]), options: .init(priority: priority))
            case 20, 21:
                let delay = Duration.milliseconds(Int64(1000 + generator.next() % 1500))
                let a = Int(generator.next() % 1000)
                return try JobRequest(
                    SumExecutor.self, .init(a: a, b: 1), options: .init(priority: priority, delay: delay))
            case 22, 23:
                return try JobRequest(
                    FailExecutor.self, .init(message: "flaky: fails on the first attempt", succeedFromAttempt: 2),
                    options: .init(priority: priority, maxAttempts: 3))
            default:
                return try JobRequest(
                    FailExecutor.self, .init(message: "always fails"),
                    options: .init(priority: priority, maxAttempts: 2))
            }
        }
    }

    static func workflow() throws -> Workflow {
        try Workflow(name: "demo") {
            try WorkflowStep(SumExecutor.self, .init(a: 20, b: 22))
            try WorkflowGroup.parallel(name: "fan-out") {
                try WorkflowStep(SleepExecutor.self, .init(seconds: 0.2))
                try WorkflowStep(SleepExecutor.self, .init(seconds: 0.1))
                try WorkflowStep(ShellExecutor.self, .init(argv: ["echo", "in parallel"]))
            }
            try WorkflowStep(
                executor: EchoExecutor.name, payloadJSON: #"{"note":"the fan-out's results"}"#, input: .previous)
        }
    }

    static func describe(_ requests: [JobRequest]) -> String {
        var counts: [String: Int] = [:]
        for request in requests {
            let kind = request.options.runAt != nil ? "\(request.executor) (delayed)" : request.executor
            counts[kind, default: 0] += 1
        }
        return counts.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }.joined(separator: ", ")
    }
}

/// A small deterministic random generator, so every demo run enqueues the same jobs.
struct SplitMix64 {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
