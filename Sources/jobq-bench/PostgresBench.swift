#if Postgres
    import Foundation
    import JobQCommandLine
    import JobQ
    import JobQPostgres
    import LatencyRelay
    import Logging
    import PostgresNIO

    /// `jobq-bench --db postgres://...`: jobq on a PostgreSQL store, each figure beside a
    /// baseline measured in the same run: a minimal PostgreSQL queue in the same database
    /// (``MinimalPostgresQueue``), driven from one connection by the bench itself.
    ///
    /// The database must hold no jobs: the bench fills it and empties it between workloads.
    struct PostgresBench {
        let url: String
        let settings: PostgresSettings
        let logger: Logger

        init(url: String) throws {
            self.url = url
            settings = try PostgresSettings(url: url)
            var logger = Logger(label: "jobq.bench")
            logger.logLevel = .error
            self.logger = logger
        }

        func queue() async throws -> JobQueue { try await JobQueue(postgres: settings, logger: logger) }

        /// A connection for the raw baseline and the bench's own bookkeeping. Its `search_path` is
        /// the store's schema (as every connection jobq makes), so the bench names jobq's
        /// tables bare.
        func connect() async throws -> PostgresConnection {
            try await PostgresConnector(settings: settings, logger: logger).connect()
        }

        /// Refuses a database that holds jobs, then empties what earlier bench runs left.
        func prepare(_ connection: PostgresConnection) async throws {
            _ = try await queue()  // creates the schema on a new database
            let jobs = try await count(connection, "SELECT COUNT(*) FROM jobs")
            guard jobs == 0 else {
                throw CLIError.usage(
                    "bench: \(settings) holds \(jobs) jobs; the bench fills and empties its store, so give it a database of its own"
                )
            }
            try await reset(connection)
            try await MinimalPostgresQueue(connection: connection, logger: logger).create()
        }

        func reset(_ connection: PostgresConnection) async throws {
            try await connection.query(
                "TRUNCATE jobs, events, dependencies, workers, queues, steps, signals RESTART IDENTITY", logger: logger)
        }

        func count(_ connection: PostgresConnection, _ sql: String) async throws -> Int {
            try await connection.query(PostgresQuery(unsafeSQL: sql), logger: logger).collect().first?.first?.decode(
                Int.self) ?? 0
        }

        // MARK: Enqueue

        /// jobq: one `enqueue` per job. Jobs per second.
        func enqueueOneAtATime(_ count: Int) async throws -> Double {
            let queue = try await queue()
            let start = ContinuousClock.now
            for index in 0..<count { try await queue.enqueue(try BenchWorkloads.sumRequest(index)) }
            return Double(count) / (ContinuousClock.now - start).inSeconds
        }

        /// An application's transactions on a connection of its own, each writing an order row
        /// and `extra` more: jobs enqueued in the same transaction (one call for all) or rows of
        /// its own in one statement (the baseline). Extra items per second; with `.none`,
        /// transactions per second: the application's own cost.
        func appTransactions(_ count: Int, extra: AppTransactionExtra = .none, on connection: PostgresConnection)
            async throws -> Double
        {
            let queue = try await queue()
            try await connection.query(
                "CREATE TABLE IF NOT EXISTS public.bench_app_orders (id bigserial PRIMARY KEY, note text NOT NULL)",
                logger: logger)
            let perTransaction = extra.count
            let transactions = max(1, count / max(1, perTransaction))
            let start = ContinuousClock.now
            for index in 0..<transactions {
                try await connection.query("BEGIN", logger: logger)
                try await connection.query(
                    "INSERT INTO public.bench_app_orders (note) VALUES ('order')", logger: logger)
                switch extra {
                case .none: break
                case .jobs(let n):
                    let requests = try ((index * n)..<((index + 1) * n)).map(BenchWorkloads.sumRequest)
                    if n == 1 {
                        try await queue.enqueue(requests[0], in: connection)
                    } else {
                        try await queue.enqueue(contentsOf: requests, in: connection)
                    }
                case .rows(let n):
                    try await connection.query(
                        "INSERT INTO public.bench_app_orders (note) SELECT 'line' FROM generate_series(1, \(n))",
                        logger: logger)
                case .jobRowsRaw(let n):
                    // The connection's search_path is the store's schema.
                    try await connection.query(
                        """
                        INSERT INTO jobs (queue, executor, payload, priority, state, max_attempts, run_at, created_at)
                        SELECT 'default', 'sum', '{"a":1,"b":1}', 0, 'ready', 3, 0, 0 FROM generate_series(1, \(n))
                        """, logger: logger)
                }
                try await connection.query("COMMIT", logger: logger)
            }
            let rate = Double(transactions * max(1, perTransaction)) / (ContinuousClock.now - start).inSeconds
            try await connection.query("DROP TABLE public.bench_app_orders", logger: logger)
            return rate
        }

        /// jobq: `enqueue(contentsOf:)` in batches of 1,000. Jobs per second.
        func enqueueInBulk(_ count: Int) async throws -> Double {
            let queue = try await queue()
            let start = ContinuousClock.now
            var index = 0
            while index < count {
                try await queue.enqueue(
                    contentsOf: try (index..<min(index + 1000, count)).map(BenchWorkloads.sumRequest))
                index += 1000
            }
            return Double(count) / (ContinuousClock.now - start).inSeconds
        }

        // MARK: Drain

        /// `count` ready jobs, enqueued in bulk.
        func backlog(_ count: Int, partitions: Int? = nil) async throws {
            let queue = try await queue()
            var index = 0
            while index < count {
                try await queue.enqueue(
                    contentsOf: try (index..<min(index + 1000, count)).map {
                        try BenchWorkloads.sumRequest($0, partitions: partitions)
                    })
                index += 1000
            }
        }

        /// jobq: `processes` `jobq work --concurrency 4` processes drain `count` jobs. Jobs per second.
        /// With `connections`, each process opens that many connections at most (the URL's
        /// `connections=`) instead of the default.
        /// With `through`, the workers connect through that URL (a pooler's, to the same database).
        func drainWithWorkerProcesses(
            _ count: Int, processes: Int, partitions: Int? = nil, connections: Int? = nil, through: String? = nil,
            on connection: PostgresConnection
        ) async throws -> Double {
            try await drainCosts(
                count, processes: processes, partitions: partitions, connections: connections, through: through,
                server: nil, on: connection
            ).rate
        }

        /// A drain's jobs per second, and what each job cost in CPU: the worker processes'
        /// (start-up included) and, with `server`, the server's.
        struct DrainCosts {
            let rate: Double
            let workersCPUPerJob: Double
            let serverCPUPerJob: Double?
        }

        /// ``drainWithWorkerProcesses(_:processes:partitions:connections:through:on:)`` with the CPU
        /// each job cost the workers and, when it runs on this machine, the server.
        func drainCosts(
            _ count: Int, processes: Int, partitions: Int? = nil, connections: Int? = nil, through: String? = nil,
            server: ServerCPU?, on connection: PostgresConnection
        ) async throws -> DrainCosts {
            try await backlog(count, partitions: partitions)
            let base = through ?? url
            let workerURL = connections.map { base + (base.contains("?") ? "&" : "?") + "connections=\($0)" } ?? base
            let backendsBefore = try await clientBackends(connection)
            let serverBefore = server?.seconds()
            let start = ContinuousClock.now
            let children = try (0..<processes).map { _ in
                try BenchChild(["--db", workerURL, "work", "--until-empty", "--concurrency", "4", "--no-scheduler"])
            }
            var statuses: [Int32] = []
            var workersCPU = 0.0
            for child in children {
                let ended = await child.waitMeasured()
                statuses.append(ended.status)
                workersCPU += ended.cpuSeconds
            }
            let elapsed = (ContinuousClock.now - start).inSeconds
            // The workers' backends end after their processes: read the server's CPU once they
            // are gone and reaped (one still exiting is in no process's count).
            if server != nil {
                let settled = ContinuousClock.now + .seconds(10)
                while try await clientBackends(connection) > backendsBefore, ContinuousClock.now < settled {
                    try await Task.sleep(for: .milliseconds(20))
                }
                try await Task.sleep(for: .milliseconds(100))
            }
            let serverCPU: Double? = if let server, let serverBefore { server.seconds() - serverBefore } else { nil }
            let done = try await self.count(connection, "SELECT COUNT(*) FROM jobs WHERE state = 'succeeded'")
            guard statuses.allSatisfy({ $0 == 0 }), done == count else {
                throw CLIError.failure("bench: worker processes exited \(statuses) after \(done) of \(count) jobs")
            }
            return DrainCosts(
                rate: Double(count) / elapsed, workersCPUPerJob: workersCPU / Double(count) * 1e6,
                serverCPUPerJob: serverCPU.map { $0 / Double(count) * 1e6 })
        }

        /// The database's client connections now.
        private func clientBackends(_ connection: PostgresConnection) async throws -> Int {
            try await count(
                connection,
                "SELECT COUNT(*) FROM pg_stat_activity WHERE datname = current_database() AND backend_type = 'client backend'"
            )
        }

        /// After a drain: jobs per second from the moment every worker was running jobs (the
        /// latest of the workers' first starts) to the last job's success, as a peer that reports
        /// its drains from "workers ready" measures them; process start-up left out.
        func drainRateFromReady(_ count: Int, on connection: PostgresConnection) async throws -> Double {
            let rows = try await connection.query(
                """
                SELECT MAX(finished_at) - (SELECT MAX(first) FROM (SELECT MIN(started_at) AS first FROM jobs
                    WHERE state = 'succeeded' GROUP BY worker_id) AS workers)
                FROM jobs WHERE state = 'succeeded'
                """, logger: logger
            ).collect()
            let seconds = try rows.first?.first?.decode(Double.self) ?? 0
            guard seconds > 0 else { throw CLIError.failure("bench: the drain's jobs have no start and finish times") }
            return Double(count) / seconds
        }

        // MARK: Latency

        /// An idle `jobq work` process; `count` jobs enqueued one after the other, each once the
        /// last finished. Milliseconds from each job's enqueue commit (created_at) to the worker's
        /// success commit (finished_at): the trip one way, through the server's NOTIFY.
        ///
        /// The worker is started with `workerArguments` too, and the samples begin once `ready`
        /// returns.
        func pickUpLatency(
            _ count: Int, workerArguments: [String] = [], through: String? = nil,
            ready: (@Sendable () async throws -> Void)? = nil, on connection: PostgresConnection
        ) async throws -> [Double] {
            let queue = try await queue()
            let child = try BenchChild(
                ["--db", through ?? url, "work", "--concurrency", "4", "--no-scheduler"] + workerArguments)
            try await ready?()
            var samples: [Double] = []
            for index in 0...count {
                let job = try await queue.enqueue(try BenchWorkloads.sumRequest(index))
                var finished: Job?
                let deadline = ContinuousClock.now + .seconds(30)
                while finished == nil {
                    if let current = try await queue.job(job.id), current.state == .succeeded {
                        finished = current
                        break
                    }
                    guard ContinuousClock.now < deadline else {
                        child.terminate()
                        throw CLIError.failure("bench: the worker did not run job \(job.id)")
                    }
                    try await Task.sleep(for: .microseconds(200))
                }
                // The first job waits for the worker to start.
                if index > 0, let done = finished?.finishedAt {
                    samples.append(done.timeIntervalSince(job.createdAt) * 1000)
                }
            }
            child.terminate()
            _ = await child.wait()
            return samples
        }

        /// Pick-up latency (one way, ms) beside the cleaner deleting `finished` succeeded jobs past
        /// their retention, and without it (`--no-cleaner`) on the same kind of store; and whether
        /// the cleaner was still deleting when the last sample was taken.
        func pickUpLatencyBesideCleaner(_ count: Int, finished: Int, on connection: PostgresConnection) async throws
            -> BenchCommand.CleanerLatency
        {
            func fill() async throws {
                try await reset(connection)
                let now = Date().timeIntervalSince1970
                try await connection.query(
                    PostgresQuery(
                        unsafeSQL: """
                            INSERT INTO jobs (queue, executor, payload, priority, state, attempt, max_attempts, run_at,
                                created_at, finished_at, result)
                            SELECT 'default', 'sum', CAST('{"a":1,"b":1}' AS json), 0, 'succeeded', 1, 3, \(now - 3600),
                                \(now - 3600), \(now - 60), CAST('{"sum":2}' AS json)
                            FROM generate_series(1, \(finished))
                            """), logger: logger)
                try await connection.query("ANALYZE jobs", logger: logger)
                try await queue().setRetention(QueueRetention(succeeded: .seconds(1)), for: "default")
            }
            try await fill()
            let quiet = try await pickUpLatency(count, workerArguments: ["--no-cleaner"], on: connection)
            try await fill()
            let countRows = self.count
            let cleaning = try await pickUpLatency(
                count,
                ready: {
                    let deadline = ContinuousClock.now + .seconds(60)
                    while ContinuousClock.now < deadline {
                        if try await countRows(connection, "SELECT COUNT(*) FROM jobs") < finished { return }
                        try await Task.sleep(for: .milliseconds(100))
                    }
                    throw CLIError.failure("bench: the cleaner deleted nothing within 60s")
                }, on: connection)
            let left = try await self.count(connection, "SELECT COUNT(*) FROM jobs WHERE state = 'succeeded'")
            try await reset(connection)
            return BenchCommand.CleanerLatency(cleaning: cleaning, quiet: quiet, overlapped: left > 0)
        }

        static func binds(_ values: any PostgresEncodable...) throws -> PostgresBindings {
            var bindings = PostgresBindings()
            for value in values { try bindings.append(value) }
            return bindings
        }
    }

    extension BenchCommand {
        /// The PostgreSQL bench's table.
        func postgresBench(url: String) async throws -> [Row] {
            do {
                return try await postgresWorkloads(url: url)
            } catch let error as PSQLError {
                // The server's message and the statement; postgres-nio's own description says nothing.
                let message = error.serverInfo?[.message] ?? "\(error.code)"
                throw CLIError.failure(
                    "bench: PostgreSQL: \(message) in \(error.query.map { String($0.sql.prefix(200)) } ?? "a statement")"
                )
            }
        }

        private func postgresWorkloads(url: String) async throws -> [Row] {
            if appTransactionsOnly {
                let bench = try PostgresBench(url: url)
                let connection = try await bench.connect()
                defer { Task { try? await connection.close() } }
                try await bench.prepare(connection)
                return try await postgresAppTransactionRows(
                    bench, connection: connection, label: "PostgreSQL", count: try size(enqueueJobs, 6_000, 200)
                ) { text in
                    if !json { FileHandle.standardError.write(Data("bench: PostgreSQL: \(text)...\n".utf8)) }
                }
            }
            guard roundTripMs >= 0, roundTripMs <= 1000 else {
                throw CLIError.usage("--round-trip-ms must be between 0 and 1000, got \(roundTripMs)")
            }
            var rows = try await postgresRows(url: url, label: "PostgreSQL")
            guard roundTripMs > 0 else { return rows }
            // The same workloads through a relay that holds every packet half the round trip
            // each way: the server as across a network, where round trips, not the server's
            // work, decide how fast a queue goes.
            let settings = try PostgresSettings(url: url)
            let relay = try LatencyRelay(
                targetHost: settings.host, targetPort: settings.port,
                oneWayDelay: .nanoseconds(Int64(roundTripMs * 500_000)))
            defer { relay.stop() }
            guard var components = URLComponents(string: url) else {
                throw CLIError.usage("bench: '\(settings)' is not a URL the relay can rewrite")
            }
            components.host = "127.0.0.1"
            components.port = relay.port
            let relayed = components.string ?? url
            rows += try await postgresRows(
                url: relayed,
                label: "PostgreSQL, \(DurationParser.format(.nanoseconds(Int64(roundTripMs * 1e6)))) round trip")
            return rows
        }

        private func postgresRows(url: String, label: String) async throws -> [Row] {
            // Sizes that keep each figure a couple of seconds long on a server on loopback; through
            // the relay a one-at-a-time enqueue costs a round trip or more, so it enqueues a tenth.
            let direct = label == "PostgreSQL"
            let enqueueCount = max(1, try size(enqueueJobs, 6_000, 200) / (direct ? 1 : 10))
            let bulkCount = try size(bulkJobs, 100_000, 2_000)
            let drainCount = try size(drainJobs, 50_000, 1_000)
            let latencyCount = try size(latencyJobs, 200, 30)
            let finishedCount = try size(finishedJobs, 1_000_000, 20_000)
            let bench = try PostgresBench(url: url)
            let connection = try await bench.connect()
            defer { Task { try? await connection.close() } }
            let minimal = MinimalPostgresQueue(connection: connection, logger: bench.logger)
            func progress(_ text: String) {
                if !json { FileHandle.standardError.write(Data("bench: \(label): \(text)...\n".utf8)) }
            }
            try await bench.prepare(connection)
            progress("enqueue, and the minimal queue's")
            // Each figure's runs start from an empty store (the minimal queue's from an empty table).
            func jobq(_ body: () async throws -> Double) async throws -> Measured {
                try await measure {
                    try await bench.reset(connection)
                    return try await body()
                }
            }
            func minimalQueue(_ body: () async throws -> Double) async throws -> Measured {
                try await measure {
                    try await minimal.reset()
                    return try await body()
                }
            }
            let minimalSingle = try await minimalQueue { try await minimal.enqueueOneAtATime(enqueueCount) }
            let single = try await jobq { try await bench.enqueueOneAtATime(enqueueCount) }
            let appRows = try await postgresAppTransactionRows(
                bench, connection: connection, label: label, count: enqueueCount, progress: progress)
            let minimalBulk = try await minimalQueue { try await minimal.enqueueInBulk(bulkCount) }
            let bulk = try await jobq { try await bench.enqueueInBulk(bulkCount) }
            progress("the minimal queue's drain")
            // Four connections, as many as the jobq drain with the most processes claims on at once.
            var drainConnections: [PostgresConnection] = []
            for _ in 0..<3 { drainConnections.append(try await bench.connect()) }
            defer { for extra in drainConnections { Task { try? await extra.close() } } }
            // CPU per job beside the rates, the server's too when it runs on this machine.
            let server = try await ServerCPU(connection, logger: bench.logger)
            let minimalRuns = try await repeated {
                try await minimal.reset()
                let serverBefore = server?.seconds()
                let clientBefore = ProcessCPU.now()
                let rate = try await minimal.drain(drainCount, alongside: drainConnections)
                let client = (ProcessCPU.now() - clientBefore) / Double(drainCount) * 1e6
                let serverCPU = serverBefore.map { (server!.seconds() - $0) / Double(drainCount) * 1e6 }
                return (rate: rate, client: client, server: serverCPU)
            }
            let minimalDrain = minimalRuns.measured(\.rate)
            try await minimal.reset()
            var drains:
                [(processes: Int, rate: Measured, fromReady: Measured, workersCPU: Measured, serverCPU: Measured?)] =
                    []
            for processes in [1, 2, 4] {
                progress("drain with \(processes) `jobq work` process(es)")
                let runs = try await repeated {
                    try await bench.reset(connection)
                    let costs = try await bench.drainCosts(
                        drainCount, processes: processes, server: server, on: connection)
                    return (costs, try await bench.drainRateFromReady(drainCount, on: connection))
                }
                let serverCPU = runs.compactMap(\.0.serverCPUPerJob)
                drains.append(
                    (
                        processes, runs.measured(\.0.rate), runs.measured(\.1), runs.measured(\.0.workersCPUPerJob),
                        serverCPU.count == runs.count ? Measured(serverCPU) : nil
                    ))
            }
            progress("drain with 1 `jobq work` process under a concurrency limit that never binds")
            // The limits are set after each run's reset, which empties the queues' settings too.
            let limits = try await bench.queue()
            let limitedDrain = try await jobq {
                try await limits.setLimits(QueueLimits(concurrency: BenchCommand.neverBinding), for: "default")
                return try await bench.drainWithWorkerProcesses(drainCount, processes: 1, on: connection)
            }
            progress("drain with 1 `jobq work` process, 5 at once per partition over 1,000 partitions")
            let partitionedDrain = try await jobq {
                try await limits.setLimits(BenchWorkloads.partitionedLimits, for: "default")
                return try await bench.drainWithWorkerProcesses(
                    drainCount, processes: 1, partitions: 1000, on: connection)
            }
            try await limits.setLimits(QueueLimits(), for: "default")
            // The connection budget: the default (3) is the first drain above.
            var budgets: [(connections: Int, rate: Measured)] = []
            if label == "PostgreSQL" {
                for connections in [1, 2, 7] {
                    progress("drain with 1 `jobq work` process opening at most \(connections) connection(s)")
                    budgets.append(
                        (
                            connections,
                            try await jobq {
                                try await bench.drainWithWorkerProcesses(
                                    drainCount, processes: 1, connections: connections, on: connection)
                            }
                        ))
                }
            }
            var pooled: (drain: Measured, pickUp: [Double])?
            if label == "PostgreSQL", let pooler {
                progress("drain with 1 `jobq work` process through the pooler")
                let drain = try await jobq {
                    try await bench.drainWithWorkerProcesses(drainCount, processes: 1, through: pooler, on: connection)
                }
                try await bench.reset(connection)
                progress("pick-up latency through the pooler")
                pooled = (drain, try await bench.pickUpLatency(min(latencyCount, 30), through: pooler, on: connection))
            }
            progress("durable functions of 10 steps, and as many plain jobs")
            let functionCount = try size(nil, 500, 50)
            let plainForFunctions = try await jobq {
                try await BenchWorkloads.drainPlain(try await bench.queue(), jobs: functionCount * 10)
            }
            let functionSteps = try await jobq {
                try await BenchWorkloads.runFunctions(try await bench.queue(), functions: functionCount, steps: 10)
            }
            try await bench.reset(connection)
            progress("a signal to its function's success")
            let signalled = try await BenchWorkloads.signalLatency(try await bench.queue(), count: latencyCount)
            try await bench.reset(connection)
            progress("pick-up latency")
            let latency = try await bench.pickUpLatency(latencyCount, on: connection)
            try await bench.reset(connection)
            // Beside the cleaner: on the direct connection only (the cleaner's cost is the server's).
            var besideCleaner: BenchCommand.CleanerLatency?
            if label == "PostgreSQL" {
                progress("pick-up latency beside the cleaner deleting \(finishedCount) finished jobs")
                besideCleaner = try await bench.pickUpLatencyBesideCleaner(
                    latencyCount, finished: finishedCount, on: connection)
            }
            try await minimal.drop()
            let baseline = "minimal PostgreSQL queue"
            var rows = [
                Row(
                    workload: "\(label): durable functions of 10 steps (\(functionCount), concurrency 4)",
                    value: functionSteps, unit: "steps/s",
                    baseline: "plain drain of \(functionCount * 10) jobs in-process, concurrency 4",
                    baselineValue: plainForFunctions, ratio: functionSteps / plainForFunctions),
                Row(
                    workload: "\(label): a signal to its parked function's success p50 (in-process worker)",
                    value: percentile(signalled.toSuccess, 50), unit: "ms"),
                Row(
                    workload: "\(label): a signal sent to its function taking it p50 (in-process worker)",
                    value: percentile(signalled.toTake, 50), unit: "ms",
                    baseline: "enqueue committed to done in an idle worker process, p50",
                    baselineValue: percentile(latency, 50),
                    ratio: percentile(latency, 50) / percentile(signalled.toTake, 50)),
                Row(
                    workload: "\(label): enqueue, one per transaction", value: single, unit: "jobs/s",
                    baseline: "\(baseline), one INSERT each", baselineValue: minimalSingle,
                    ratio: single / minimalSingle),
                Row(
                    workload: "\(label): enqueue, bulk (batches of 1,000)", value: bulk, unit: "jobs/s",
                    baseline: "\(baseline), one INSERT over arrays", baselineValue: minimalBulk,
                    ratio: bulk / minimalBulk)
            ]
            rows.insert(contentsOf: appRows, at: rows.count - 1)
            for drain in drains {
                rows.append(
                    Row(
                        workload: "\(label): drain with \(drain.processes) `jobq work` process(es), concurrency 4 each",
                        value: drain.rate, unit: "jobs/s",
                        baseline: "\(baseline), claim+complete by 100, 4 connections", baselineValue: minimalDrain,
                        ratio: drain.rate / minimalDrain))
            }
            // What each job cost in CPU: the ratio is the minimal queue's over jobq's (higher is
            // better, as for the rates); the minimal queue's client is this process.
            let minimalClientCPU = minimalRuns.measured(\.client)
            // Read in clock ticks (10 ms): a drain too short to take one says nothing, and its
            // ratio would read 0.
            let minimalServerCPU =
                minimalRuns.allSatisfy({ ($0.server ?? 0) > 0 }) ? minimalRuns.measured { $0.server! } : nil
            func cpuRow(_ processes: Int, _ part: String, _ value: Measured, minimal: Measured, _ minimalPart: String)
                -> Row
            {
                Row(
                    workload: "\(label): CPU per job: drain with \(processes) `jobq work` process(es), \(part)",
                    value: value, unit: "us/job", baseline: "\(baseline)'s \(minimalPart), CPU per job",
                    baselineValue: minimal, ratio: minimal / value)
            }
            for drain in drains {
                rows.append(
                    cpuRow(
                        drain.processes, "the workers (start-up included)", drain.workersCPU, minimal: minimalClientCPU,
                        "client"))
                if let serverCPU = drain.serverCPU, let minimalServerCPU {
                    rows.append(cpuRow(drain.processes, "the server", serverCPU, minimal: minimalServerCPU, "server"))
                }
            }
            if server == nil {
                FileHandle.standardError.write(
                    Data(
                        "bench: \(label): the server's CPU per job is left out: the server is not on this machine\n"
                            .utf8))
            } else if minimalServerCPU == nil {
                FileHandle.standardError.write(
                    Data(
                        ("bench: \(label): the server's CPU per job is left out: the minimal queue's drain used less "
                            + "than a clock tick of it; give more --drain-jobs\n").utf8))
            }
            for drain in drains {
                rows.append(
                    Row(
                        workload:
                            "\(label): the same drain with \(drain.processes) process(es), from all workers running to the last job done",
                        value: drain.fromReady, unit: "jobs/s", baseline: "the same from process start to exit",
                        baselineValue: drain.rate, ratio: drain.fromReady / drain.rate))
            }
            rows.append(
                BenchCommand.limitedDrainRow(
                    "\(label): drain with 1 `jobq work` process, queue limited to \(BenchCommand.neverBinding) at once (never binds)",
                    limitedDrain, unlimited: drains[0].rate))
            rows.append(
                BenchCommand.limitedDrainRow(
                    "\(label): drain with 1 `jobq work` process, 5 at once per partition of 1,000 (payload member /c)",
                    partitionedDrain, unlimited: drains[0].rate))
            for budget in budgets {
                rows.append(
                    Row(
                        workload:
                            "\(label): drain with 1 `jobq work` process, at most \(budget.connections) connection(s) (connections=\(budget.connections))",
                        value: budget.rate, unit: "jobs/s", baseline: "the same with the default 3",
                        baselineValue: drains[0].rate, ratio: budget.rate / drains[0].rate))
            }
            rows += [
                Row(
                    workload: "\(label): enqueue committed to done in an idle worker process, p50",
                    value: percentile(latency, 50), unit: "ms"),
                Row(
                    workload: "\(label): enqueue committed to done in an idle worker process, p99",
                    value: percentile(latency, 99), unit: "ms")
            ]
            if let besideCleaner { rows.append(besideCleaner.row("\(label): pick-up", finished: finishedCount)) }
            if let pooled {
                rows += [
                    Row(
                        workload: "\(label): drain with 1 `jobq work` process through the pooler (--pooler)",
                        value: pooled.drain, unit: "jobs/s", baseline: "the same drain direct",
                        baselineValue: drains[0].rate, ratio: pooled.drain / drains[0].rate),
                    Row(
                        workload:
                            "\(label): enqueue committed to done in an idle worker process through the pooler, p50 (no LISTEN: the 1 s poll)",
                        value: percentile(pooled.pickUp, 50), unit: "ms", baseline: "the same direct",
                        baselineValue: percentile(latency, 50),
                        ratio: percentile(latency, 50) / percentile(pooled.pickUp, 50))
                ]
            }
            return rows
        }
    }

    extension BenchCommand {
        /// The enqueue in the application's transaction (its own connection, BEGIN ... COMMIT)
        /// beside the application's transaction alone: one job, and 100 jobs in one transaction.
        /// Each run starts from an empty store.
        func postgresAppTransactionRows(
            _ bench: PostgresBench, connection: PostgresConnection, label: String, count: Int,
            progress: (String) -> Void
        ) async throws -> [Row] {
            func jobq(_ body: () async throws -> Double) async throws -> Measured {
                try await measure {
                    try await bench.reset(connection)
                    return try await body()
                }
            }
            progress("enqueue in the application's transaction")
            let appOnly = try await jobq { try await bench.appTransactions(count, on: connection) }
            let appWithRawRow = try await jobq {
                try await bench.appTransactions(count, extra: .jobRowsRaw(1), on: connection)
            }
            let appWithJob = try await jobq { try await bench.appTransactions(count, extra: .jobs(1), on: connection) }
            let appRows100 = try await jobq {
                try await bench.appTransactions(count * 10, extra: .rows(100), on: connection)
            }
            let appJobs100 = try await jobq {
                try await bench.appTransactions(count * 10, extra: .jobs(100), on: connection)
            }
            return [
                Row(
                    workload: "\(label): enqueue in the app's transaction (its row + the job)", value: appWithJob,
                    unit: "jobs/s", baseline: "the app's transaction, its row only", baselineValue: appOnly,
                    ratio: appWithJob / appOnly),
                Row(
                    workload:
                        "\(label): the app's transaction + a job's row by its own INSERT (one more statement, no jobq code)",
                    value: appWithRawRow, unit: "jobs/s", baseline: "the app's transaction, its row only",
                    baselineValue: appOnly, ratio: appWithRawRow / appOnly),
                Row(
                    workload: "\(label): enqueue 100 jobs in one app transaction (its row + 100 jobs)",
                    value: appJobs100, unit: "jobs/s", baseline: "its row + 100 rows of its own",
                    baselineValue: appRows100, ratio: appJobs100 / appRows100)
            ]
        }
    }
#endif
