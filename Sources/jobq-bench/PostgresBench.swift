#if Postgres
    import Foundation
    import JobQCommandLine
    import JobQ
    import JobQPostgres
    import Logging
    import PostgresNIO

    /// `jobq bench --db postgres://...`: jobq on a PostgreSQL store, each figure beside a raw
    /// baseline measured in the same run: the statements jobq sends for that work, sent straight
    /// through postgres-nio from one connection, without jobq's threads, pools or Swift code.
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

        /// A connection for the raw baseline and the bench's own bookkeeping.
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
        }

        func reset(_ connection: PostgresConnection) async throws {
            try await connection.query(
                "TRUNCATE jobs, events, dependencies, workers, queues RESTART IDENTITY", logger: logger)
        }

        func count(_ connection: PostgresConnection, _ sql: String) async throws -> Int {
            try await connection.query(PostgresQuery(unsafeSQL: sql), logger: logger).collect().first?.first?.decode(
                Int.self) ?? 0
        }

        static let lock = "SELECT pg_advisory_xact_lock(\(0x6A6F_6265)), pg_notify('jobq_commits', '')"
        static let insertJob = """
            INSERT INTO jobs (queue, executor, payload, priority, state, max_attempts, run_at, created_at, unmet)
            VALUES ('default', 'sum', CAST($1 AS json), 0, 'ready', 3, $2, $2, 0)
            RETURNING id, queue, executor, state, priority, payload, result, error, attempt, max_attempts, run_at, timeout, created_at
            """
        static let insertEvent = """
            INSERT INTO events (job_id, kind, queue, executor, batch, data, created_at, workflow_id)
            VALUES ($1, 'enqueued', 'default', 'sum', NULL, CAST($2 AS json), $3, NULL)
            """

        // MARK: Enqueue

        /// jobq: one `enqueue` per job. Jobs per second.
        func enqueueOneAtATime(_ count: Int) async throws -> Double {
            let queue = try await queue()
            let start = ContinuousClock.now
            for index in 0..<count { try await queue.enqueue(try BenchWorkloads.sumRequest(index)) }
            return Double(count) / (ContinuousClock.now - start).inSeconds
        }

        /// Raw: the five statements of jobq's single enqueue (begin, lock and notify, the job, its
        /// event, commit). Jobs per second.
        func rawEnqueueOneAtATime(_ count: Int, on connection: PostgresConnection) async throws -> Double {
            let start = ContinuousClock.now
            for index in 0..<count {
                try await connection.query("BEGIN", logger: logger)
                try await connection.query(PostgresQuery(unsafeSQL: Self.lock), logger: logger)
                let now = Date().timeIntervalSince1970
                let id = try await connection.query(
                    PostgresQuery(unsafeSQL: Self.insertJob, binds: try Self.binds(#"{"a":\#(index),"b":1}"#, now)),
                    logger: logger
                ).collect().first!.first!.decode(Int64.self)
                try await connection.query(
                    PostgresQuery(unsafeSQL: Self.insertEvent, binds: try Self.binds(id, #"{"priority":0}"#, now)),
                    logger: logger)
                try await connection.query("COMMIT", logger: logger)
            }
            return Double(count) / (ContinuousClock.now - start).inSeconds
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

        /// Raw: what jobq sends for a batch of 1,000: one INSERT per job, the events in INSERTs of
        /// 64 rows, in one locked transaction. Jobs per second.
        func rawEnqueueInBulk(_ count: Int, on connection: PostgresConnection) async throws -> Double {
            let start = ContinuousClock.now
            var index = 0
            while index < count {
                let batch = index..<min(index + 1000, count)
                try await connection.query("BEGIN", logger: logger)
                try await connection.query(PostgresQuery(unsafeSQL: Self.lock), logger: logger)
                let now = Date().timeIntervalSince1970
                var ids: [Int64] = []
                for job in batch {
                    ids.append(
                        try await connection.query(
                            PostgresQuery(
                                unsafeSQL: Self.insertJob, binds: try Self.binds(#"{"a":\#(job),"b":1}"#, now)),
                            logger: logger
                        ).collect().first!.first!.decode(Int64.self))
                }
                for chunk in stride(from: 0, to: ids.count, by: 64) {
                    let rows = ids[chunk..<min(chunk + 64, ids.count)]
                    let values = rows.map {
                        "(\($0), 'enqueued', 'default', 'sum', NULL, '{\"priority\":0}', \(now), NULL)"
                    }
                    try await connection.query(
                        PostgresQuery(
                            unsafeSQL:
                                "INSERT INTO events (job_id, kind, queue, executor, batch, data, created_at, workflow_id) VALUES "
                                + values.joined(separator: ", ")),
                        logger: logger)
                }
                try await connection.query("COMMIT", logger: logger)
                index = batch.upperBound
            }
            return Double(count) / (ContinuousClock.now - start).inSeconds
        }

        // MARK: Drain

        /// `count` ready jobs, enqueued in bulk.
        func backlog(_ count: Int) async throws {
            let queue = try await queue()
            var index = 0
            while index < count {
                try await queue.enqueue(
                    contentsOf: try (index..<min(index + 1000, count)).map(BenchWorkloads.sumRequest))
                index += 1000
            }
        }

        /// jobq: `processes` `jobq work --concurrency 4` processes drain `count` jobs. Jobs per second.
        func drainWithWorkerProcesses(_ count: Int, processes: Int, on connection: PostgresConnection) async throws
            -> Double
        {
            try await backlog(count)
            let start = ContinuousClock.now
            let children = try (0..<processes).map { _ in
                try BenchChild(["--db", url, "work", "--until-empty", "--concurrency", "4", "--no-scheduler"])
            }
            var statuses: [Int32] = []
            for child in children { statuses.append(await child.wait().status) }
            let elapsed = (ContinuousClock.now - start).inSeconds
            let done = try await self.count(connection, "SELECT COUNT(*) FROM jobs WHERE state = 'succeeded'")
            guard statuses.allSatisfy({ $0 == 0 }), done == count else {
                throw CLIError.failure("bench: worker processes exited \(statuses) after \(done) of \(count) jobs")
            }
            return Double(count) / elapsed
        }

        /// Raw: jobq's claim and completion transactions for batches of 100 (promote due jobs, read
        /// paused queues, claim in index order with SKIP LOCKED; then one fenced UPDATE per job and
        /// its `started` and `succeeded` events in INSERTs of 64 rows). Jobs per second.
        func rawClaimComplete(_ count: Int, on connection: PostgresConnection) async throws -> Double {
            try await backlog(count)
            let start = ContinuousClock.now
            var done = 0
            while done < count {
                let now = Date().timeIntervalSince1970
                try await connection.query("BEGIN", logger: logger)
                try await connection.query(PostgresQuery(unsafeSQL: Self.lock), logger: logger)
                try await connection.query(
                    PostgresQuery(
                        unsafeSQL:
                            "UPDATE jobs SET state = 'ready' WHERE state IN ('scheduled', 'failed') AND run_at <= $1",
                        binds: try Self.binds(now)), logger: logger)
                _ = try await connection.query("SELECT name FROM queues WHERE paused <> 0", logger: logger).collect()
                let claimed = try await connection.query(
                    PostgresQuery(
                        unsafeSQL: """
                            UPDATE jobs SET state = 'running', attempt = attempt + 1, worker_id = 'raw', lease_until = $1, started_at = NULL
                            WHERE id IN (SELECT id FROM jobs WHERE state = 'ready' AND queue = 'default'
                                ORDER BY priority DESC, run_at, id LIMIT 100 FOR UPDATE SKIP LOCKED)
                            RETURNING id, queue, executor, payload, priority, attempt, max_attempts, run_at, timeout, name, batch, checkpoint
                            """,
                        binds: try Self.binds(now + 30)), logger: logger
                ).collect().map { try $0.first!.decode(Int64.self) }
                try await connection.query("COMMIT", logger: logger)
                try await connection.query("BEGIN", logger: logger)
                try await connection.query(PostgresQuery(unsafeSQL: Self.lock), logger: logger)
                _ = try await connection.query(
                    "SELECT EXISTS (SELECT 1 FROM tracking_members), EXISTS (SELECT 1 FROM dependencies)",
                    logger: logger
                ).collect()
                for id in claimed {
                    try await connection.query(
                        PostgresQuery(
                            unsafeSQL: """
                                UPDATE jobs SET state = 'succeeded', result = CAST($1 AS json), error = NULL, finished_at = $2, started_at = $2,
                                    lease_until = NULL
                                WHERE id = $3 AND state = 'running' AND worker_id = 'raw' AND attempt = 1
                                """,
                            binds: try Self.binds(#"{"sum":2}"#, now, id)), logger: logger)
                }
                let events = claimed.flatMap {
                    [
                        "(\($0), 'started', 'default', 'sum', NULL, '{}', \(now), NULL)",
                        "(\($0), 'succeeded', 'default', 'sum', NULL, '{}', \(now), NULL)"
                    ]
                }
                for chunk in stride(from: 0, to: events.count, by: 64) {
                    try await connection.query(
                        PostgresQuery(
                            unsafeSQL:
                                "INSERT INTO events (job_id, kind, queue, executor, batch, data, created_at, workflow_id) VALUES "
                                + events[chunk..<min(chunk + 64, events.count)].joined(separator: ", ")),
                        logger: logger)
                }
                try await connection.query("COMMIT", logger: logger)
                done += claimed.count
                if claimed.isEmpty { break }
            }
            return Double(done) / (ContinuousClock.now - start).inSeconds
        }

        // MARK: Latency

        /// An idle `jobq work` process; `count` jobs enqueued one after the other, each once the
        /// last finished. Milliseconds from each job's enqueue commit (created_at) to the worker's
        /// success commit (finished_at): the trip one way, through the server's NOTIFY.
        func pickUpLatency(_ count: Int, on connection: PostgresConnection) async throws -> [Double] {
            let queue = try await queue()
            let child = try BenchChild(["--db", url, "work", "--concurrency", "4", "--no-scheduler"])
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
            let enqueueCount = try size(enqueueJobs, 2_000, 200)
            let bulkCount = try size(bulkJobs, 20_000, 2_000)
            let drainCount = try size(drainJobs, 10_000, 1_000)
            let latencyCount = try size(latencyJobs, 200, 30)
            let bench = try PostgresBench(url: url)
            let connection = try await bench.connect()
            defer { Task { try? await connection.close() } }
            func progress(_ text: String) {
                if !json { FileHandle.standardError.write(Data("bench: \(text)...\n".utf8)) }
            }
            try await bench.prepare(connection)
            progress("enqueue, and its raw baseline")
            let rawSingle = try await bench.rawEnqueueOneAtATime(enqueueCount, on: connection)
            try await bench.reset(connection)
            let single = try await bench.enqueueOneAtATime(enqueueCount)
            try await bench.reset(connection)
            let rawBulk = try await bench.rawEnqueueInBulk(bulkCount, on: connection)
            try await bench.reset(connection)
            let bulk = try await bench.enqueueInBulk(bulkCount)
            try await bench.reset(connection)
            progress("raw claim+complete")
            let rawDrain = try await bench.rawClaimComplete(drainCount, on: connection)
            var drains: [(processes: Int, rate: Double)] = []
            for processes in [1, 2, 4] {
                try await bench.reset(connection)
                progress("drain with \(processes) `jobq work` process(es)")
                drains.append(
                    (
                        processes,
                        try await bench.drainWithWorkerProcesses(drainCount, processes: processes, on: connection)
                    ))
            }
            try await bench.reset(connection)
            progress("pick-up latency")
            let latency = try await bench.pickUpLatency(latencyCount, on: connection)
            try await bench.reset(connection)
            let baseline = "raw claim+complete, batches of 100, one connection"
            var rows = [
                Row(
                    workload: "PostgreSQL: enqueue, one per transaction", value: single, unit: "jobs/s",
                    baseline: "the same statements raw", baselineValue: rawSingle, ratio: single / rawSingle),
                Row(
                    workload: "PostgreSQL: enqueue, bulk (batches of 1,000)", value: bulk, unit: "jobs/s",
                    baseline: "the same statements raw", baselineValue: rawBulk, ratio: bulk / rawBulk)
            ]
            for drain in drains {
                rows.append(
                    Row(
                        workload:
                            "PostgreSQL: drain with \(drain.processes) `jobq work` process(es), concurrency 4 each",
                        value: drain.rate,
                        unit: "jobs/s", baseline: baseline, baselineValue: rawDrain, ratio: drain.rate / rawDrain))
            }
            rows += [
                Row(
                    workload: "PostgreSQL: enqueue committed to done in an idle worker process, p50",
                    value: percentile(latency, 50), unit: "ms"),
                Row(
                    workload: "PostgreSQL: enqueue committed to done in an idle worker process, p99",
                    value: percentile(latency, 99), unit: "ms")
            ]
            return rows
        }
    }
#endif
