import ArgumentParser
import Foundation
import JobQ
import JobQCommandLine
import JobQCore
import Logging
import ServiceLifecycle
import Synchronization

struct WorkCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "work",
        abstract: "Run jobs with the built-in executors (shell, sleep, sum, echo, fail).",
        discussion: helpText(
            """
            Runs until SIGTERM or SIGINT: then it stops claiming, lets running jobs finish within
            --grace, releases the rest (back to ready, the attempt not counted) and exits 0.
            With --until-empty it exits 0 once no job on its queues is ready or running.
            On a terminal it shows one live status line; otherwise it logs plain lines.

            On a PostgreSQL store it runs `shell` jobs only with --allow-shell: anyone who can
            insert a job row could otherwise run commands on every worker machine (their attempts
            fail, saying so, and are retried). An SQLite store's file is readable by its owner
            only, so there shell jobs run by default. Commands never see the worker's JOBQ_*
            variables, PGPASSWORD or PGPASSFILE unless the job's env gives them, and the worker
            wipes PGPASSWORD, JOBQ_DASHBOARD_TOKEN and a password in JOBQ_DB from its own
            environment once the store is open (a command could read it from /proc/$PPID/environ).
            Commands that leave the job's process group (setsid) are still ended with it.
            """)
    )

    @OptionGroup var store: StoreOptions

    @Option(
        name: .customLong("queue"), help: "A queue to claim from, in order of preference. Repeatable. Default: default."
    )
    var queues: [String] = []

    @Option(help: "Jobs run at once.")
    var concurrency: Int = 4

    @Flag(help: "Exit once no job on these queues is ready or running (delayed jobs and pending retries don't count).")
    var untilEmpty = false

    @Flag(
        help:
            "Exit once every job on these queues is final: waits for retries and delayed jobs (and jobs waiting for dependencies)."
    )
    var untilFinished = false

    @Option(help: ArgumentHelp("How long a claimed job stays owned without a heartbeat.", valueName: "duration"))
    var lease: String = "30s"

    @Option(help: ArgumentHelp("On shutdown, how long running jobs get to finish.", valueName: "duration"))
    var grace: String = "10s"

    @Option(
        help: ArgumentHelp(
            "Wait before the first retry; doubles each attempt (with jitter), up to 1h.", valueName: "duration"))
    var backoff: String = "1s"

    @Option(
        help:
            "At most this many jobs claimed ahead of free slots (as many as finish in ~50ms), so one claim serves several jobs; 0: none."
    )
    var prefetch: Int = WorkerPool.Options().prefetch

    @Option(help: "Exit 0 after running this many jobs (recycle the worker).")
    var maxJobs: Int?

    @Flag(help: "Do not run the scheduler (which makes the jobs of `jobq schedule` schedules as they come due).")
    var noScheduler = false

    @Flag(
        help: "Do not run the cleaner (which deletes finished jobs and events past their retention: `jobq retention`).")
    var noCleaner = false

    @Option(
        help: ArgumentHelp(
            "How often the cleaner runs (default 1m; the first pass a tenth of it after start).", valueName: "duration")
    )
    var cleanerEvery: String?

    @Flag(help: "Run `shell` jobs on a PostgreSQL store (SQLite stores always run them).")
    var allowShell = false

    @Option(
        help: ArgumentHelp(
            "Serve Prometheus metrics on http://ADDRESS/metrics and a health check on /healthz. A port alone listens on 127.0.0.1; port 0 picks a free one. Off by default.",
            valueName: "[host:]port"))
    var metricsListen: String?

    func run() async throws {
        let options = try poolOptions()
        guard (1...1024).contains(concurrency) else {
            throw CLIError.usage("--concurrency must be from 1 to 1024, got \(concurrency)")
        }
        let queueNames = queues.isEmpty ? [JobOptions.defaultQueue] : queues
        if let empty = queueNames.first(where: \.isEmpty) {
            throw CLIError.usage("--queue names must not be empty, got '\(empty)'")
        }
        let metrics = try metricsListen.map(MetricsListen.init)
        CLILogging.bootstrap
        let queue = try await store.open()
        let logger = Logger(label: "jobq.worker")
        var executors = BuiltinExecutors.all
        if case .postgres = store.location, !allowShell {
            executors =
                executors.filter { !($0 is ShellExecutor) } + [
                    ShellRefusal(
                        reason:
                            "this worker does not run shell jobs: on a PostgreSQL store, start `jobq work` with --allow-shell to run them"
                    )
                ]
        }
        let pool = WorkerPool(
            queue: queue, queues: queueNames, concurrency: concurrency, executors: executors, options: options,
            logger: logger)
        let server = metrics.map { $0.service(queue, Logger(label: "jobq.metrics")) }
        // Everything that reads the environment has (the store's settings hold the password):
        // shell jobs must not find the secrets in /proc/$PPID/environ.
        WorkerSecrets.wipe()
        try await runPool(pool, beside: server.map { [$0] } ?? [], logger: logger)
    }

    func poolOptions() throws -> WorkerPool.Options {
        var options = WorkerPool.Options()
        options.lease = try parseDuration(lease, option: "--lease")
        guard options.lease >= .milliseconds(300) else {
            throw CLIError.usage("--lease must be at least 300ms, got \(lease)")
        }
        options.shutdownGracePeriod = try parseDuration(grace, option: "--grace")
        options.retryBackoff = RetryBackoff(base: try parseDuration(backoff, option: "--backoff"))
        guard !(untilEmpty && untilFinished) else {
            throw CLIError.usage("give --until-empty or --until-finished, not both")
        }
        options.stopWhen = untilEmpty ? .queuesEmpty : untilFinished ? .allJobsFinished : .never
        guard (0...10_000).contains(prefetch) else {
            throw CLIError.usage("--prefetch must be from 0 to 10000, got \(prefetch)")
        }
        options.prefetch = prefetch
        options.runsScheduler = !noScheduler
        if let cleanerEvery {
            guard !noCleaner else { throw CLIError.usage("give --no-cleaner or --cleaner-every, not both") }
            let interval = try parseDuration(cleanerEvery, option: "--cleaner-every")
            guard interval >= .milliseconds(100) else {
                throw CLIError.usage("--cleaner-every \(cleanerEvery): give 100ms or more, e.g. 1m")
            }
            options.cleanerInterval = interval
        }
        if noCleaner { options.cleanerInterval = nil }
        if let maxJobs {
            guard maxJobs >= 1 else { throw CLIError.usage("--max-jobs must be at least 1, got \(maxJobs)") }
            options.maximumJobs = maxJobs
        }
        return options
    }
}

/// Runs a pool in a ServiceGroup (so SIGTERM/SIGINT shut it down gracefully) beside a
/// reporter that draws the live status line on a terminal or logs progress lines otherwise.
func runPool(_ pool: WorkerPool, beside others: [any Service] = [], logger: Logger) async throws {
    let secondInterrupt = SecondInterrupt()
    defer { secondInterrupt.cancel() }
    let reporter = ProgressReporter(pool: pool)
    let group = ServiceGroup(
        configuration: ServiceGroupConfiguration(
            services: [
                .init(service: pool, successTerminationBehavior: .gracefullyShutdownGroup),
                .init(service: reporter)
            ] + others.map { .init(service: $0) },
            gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger))
    try await group.run()
    reporter.printSummary()
}

/// The first SIGINT starts a graceful shutdown (the ServiceGroup's); a second one exits at once.
/// Jobs still running keep their leases until they expire, then other workers take them over;
/// their commands (`shell` jobs) are killed first, so that none runs on beside its retry.
final class SecondInterrupt {
    private final class Counter: Sendable {
        let value = Mutex(0)
        func increment() -> Int {
            value.withLock {
                $0 += 1
                return $0
            }
        }
    }

    private let source: any DispatchSourceSignal

    init() {
        let counter = Counter()
        source = DispatchSource.makeSignalSource(signal: SIGINT, queue: .global())
        source.setEventHandler {
            if counter.increment() >= 2 {
                FileHandle.standardError.write(
                    Data(
                        "\nsecond interrupt: exiting now; the running jobs' commands are killed, and the jobs are taken over by other workers when their leases expire\n"
                            .utf8))
                // The running commands' guardian kills them once this process is gone
                // (CommandGuardian).
                _exit(130)
            }
        }
        source.resume()
    }

    func cancel() { source.cancel() }
}
