#if Postgres
    import Foundation
    import PostgresNIO

    /// The PostgreSQL baseline: a minimal queue in the same database, as a small PostgreSQL
    /// queue library builds one (one table, one partial index on the claim order; single
    /// enqueues of one statement; bulk enqueues of one statement over arrays; claims of 100 with
    /// SKIP LOCKED and their completions in one statement over an array; drains on four
    /// connections at once), driven by the bench itself, each a prepared statement (as asyncpg, which PgQueuer
    /// uses, prepares them). No events, no leases, no attempts, no fences: what a job costs the
    /// server at least, so that jobq's rows read as ratios to it.
    struct MinimalPostgresQueue {
        let connection: PostgresConnection
        let logger: Logger

        static let table = "bench_minimal_queue"

        func create() async throws {
            try await run(
                """
                CREATE TABLE IF NOT EXISTS \(Self.table) (
                    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                    payload json NOT NULL,
                    state text NOT NULL DEFAULT 'ready',
                    priority integer NOT NULL DEFAULT 0,
                    run_at double precision NOT NULL,
                    result json,
                    finished_at double precision)
                """)
            try await run(
                """
                CREATE INDEX IF NOT EXISTS \(Self.table)_claim ON \(Self.table) (priority DESC, run_at, id)
                WHERE state = 'ready'
                """)
            try await reset()
        }

        func reset() async throws { try await run("TRUNCATE \(Self.table) RESTART IDENTITY") }

        func drop() async throws { try await run("DROP TABLE IF EXISTS \(Self.table)") }

        /// One INSERT per job, each its own transaction. Jobs per second.
        func enqueueOneAtATime(_ count: Int) async throws -> Double {
            let start = ContinuousClock.now
            for index in 0..<count {
                _ = try await connection.execute(
                    InsertOne(payload: Self.payload(index), runAt: Date().timeIntervalSince1970), logger: logger)
            }
            return Double(count) / (ContinuousClock.now - start).inSeconds
        }

        /// One INSERT over arrays per 1,000 jobs. Jobs per second.
        func enqueueInBulk(_ count: Int) async throws -> Double {
            let start = ContinuousClock.now
            var index = 0
            while index < count {
                let batch = index..<min(index + 1000, count)
                let now = Date().timeIntervalSince1970
                _ = try await connection.execute(
                    InsertMany(payloads: batch.map(Self.payload), now: now), logger: logger)
                index = batch.upperBound
            }
            return Double(count) / (ContinuousClock.now - start).inSeconds
        }

        /// Fills the queue for a drain, outside the measurement, and gives the planner the
        /// table's statistics: without them (a table just truncated and filled, before
        /// autovacuum's analyze) the prepared claim's generic plan read every row, and the
        /// drain ran at a quarter of its speed in some runs and not others (28k and 109k jobs/s).
        func fill(_ count: Int) async throws {
            try await reset()
            _ = try await enqueueInBulk(count)
            try await run("ANALYZE \(Self.table)")
        }

        /// Claims 100 in claim order with SKIP LOCKED, then completes them in one UPDATE, until
        /// the queue is empty, on this connection and on each of `others` at once (claims never
        /// wait for each other), as a fast peer drains with a pool of connections: an upper
        /// bound for jobq's drains with several processes. Jobs per second.
        func drain(_ count: Int, alongside others: [PostgresConnection] = []) async throws -> Double {
            try await fill(count)
            let logger = self.logger
            let start = ContinuousClock.now
            let done = try await withThrowingTaskGroup(of: Int.self) { group in
                for connection in [connection] + others {
                    group.addTask {
                        var done = 0
                        while true {
                            var claimed: [Int64] = []
                            for try await (id, _) in try await connection.execute(Claim(), logger: logger) {
                                claimed.append(id)
                            }
                            if claimed.isEmpty { return done }
                            _ = try await connection.execute(
                                Complete(ids: claimed, now: Date().timeIntervalSince1970), logger: logger)
                            done += claimed.count
                        }
                    }
                }
                return try await group.reduce(0, +)
            }
            guard done == count else {
                throw MinimalQueueError(message: "the minimal queue drained \(done) of \(count) jobs")
            }
            return Double(done) / (ContinuousClock.now - start).inSeconds
        }

        static func payload(_ index: Int) -> String { #"{"a":\#(index),"b":1}"# }

        private func run(_ sql: String) async throws {
            try await connection.query(PostgresQuery(unsafeSQL: sql), logger: logger)
        }
    }

    private struct InsertOne: PostgresPreparedStatement {
        static let sql = "INSERT INTO bench_minimal_queue (payload, run_at) VALUES (CAST($1 AS json), $2)"
        typealias Row = ()
        let payload: String
        let runAt: Double
        func makeBindings() throws -> PostgresBindings {
            var bindings = PostgresBindings()
            bindings.append(payload)
            bindings.append(runAt)
            return bindings
        }
        func decodeRow(_ row: PostgresRow) throws -> Row {}
    }

    private struct InsertMany: PostgresPreparedStatement {
        static let sql = """
            INSERT INTO bench_minimal_queue (payload, run_at)
            SELECT CAST(payload AS json), $2 FROM unnest(CAST($1 AS text[])) AS batch(payload)
            """
        typealias Row = ()
        let payloads: [String]
        let now: Double
        func makeBindings() throws -> PostgresBindings {
            var bindings = PostgresBindings()
            bindings.append(payloads)
            bindings.append(now)
            return bindings
        }
        func decodeRow(_ row: PostgresRow) throws -> Row {}
    }

    private struct Claim: PostgresPreparedStatement {
        static let sql = """
            UPDATE bench_minimal_queue SET state = 'running'
            WHERE id IN (SELECT id FROM bench_minimal_queue WHERE state = 'ready'
                ORDER BY priority DESC, run_at, id LIMIT 100 FOR UPDATE SKIP LOCKED)
            RETURNING id, CAST(payload AS text)
            """
        typealias Row = (Int64, String)
        func makeBindings() throws -> PostgresBindings { PostgresBindings() }
        func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Row.self) }
    }

    private struct Complete: PostgresPreparedStatement {
        static let sql = """
            UPDATE bench_minimal_queue SET state = 'succeeded', result = CAST('{"sum":2}' AS json), finished_at = $2
            WHERE id = ANY($1)
            """
        typealias Row = ()
        let ids: [Int64]
        let now: Double
        func makeBindings() throws -> PostgresBindings {
            var bindings = PostgresBindings()
            bindings.append(ids)
            bindings.append(now)
            return bindings
        }
        func decodeRow(_ row: PostgresRow) throws -> Row {}
    }

    struct MinimalQueueError: Error, CustomStringConvertible {
        let message: String
        var description: String { "bench: \(message)" }
    }
#endif
