import Foundation
import JobQCore
import JobQSQL
import Logging
import PostgresNIO

/// Enqueueing on PostgreSQL. Jobs that are only their own row and `enqueued` event go in one
/// statement, one round trip for a job or a batch of any size (by arrays), whether jobq commits
/// it on its own or it runs in the application's transaction (`queue.enqueue(_:in:)`).
/// Any other batch (a unique key, a lane, a dependency, a batch) is the store SQL's exclusive
/// transaction.
///
/// The statement takes the shared write lock and queues its notifications first (its `lock`
/// CTE, which every insert reads from, so it is taken before any row is written), inserts the
/// jobs, and their events: the same rows, lock and notifications as a write transaction
/// (`ServerStore.write`) without BEGIN and COMMIT. In the application's transaction the `lock`
/// CTE also checks that the connection is to the store's database; when it is not, nothing is
/// locked, written or notified, and the statement says which database it is.
extension ServerStore {
    func enqueue(_ requests: [JobRequest]) async throws -> [Enqueued] {
        guard requests.allSatisfy(\.isSelfContained) else {
            return try await enqueueInTransaction(requests, lock: .exclusive)
        }
        try StoreSQL.validate(requests)
        guard !requests.isEmpty else { return [] }
        let insert = SelfContainedInsert(requests, now: StoreSQL.now(), names: server.settings.schemaNames)
        let result =
            insert.isOne
            ? try await server.autocommit(InsertOneJob.self, insert.values, line: .enqueues)
            : try await server.autocommit(InsertJobs.self, insert.values, line: .enqueues)
        let jobs = try insert.jobs(from: result)
        commitObservers.callAll()
        return jobs.map { Enqueued(job: $0, existed: false) }
    }
}

/// The one statement that enqueues self-contained jobs, its arguments, and the jobs it stored.
struct SelfContainedInsert {
    let rows: [SelfContainedJobRow]
    let now: Double
    let values: [SQLValue]
    /// The database the application's connection must be to; nil when jobq runs it itself.
    let callersDatabase: String?

    var isOne: Bool { rows.count == 1 }
    /// The statement's text, with bare names (``SchemaNames`` qualifies them where needed).
    var sql: String { isOne ? InsertOneJob.sql : InsertJobs.sql }

    init(_ requests: [JobRequest], now: Double, names: SchemaNames, callersDatabase: String? = nil) {
        let rows = requests.map { SelfContainedJobRow($0, now: now) }
        self.rows = rows
        self.now = now
        self.callersDatabase = callersDatabase
        let database = callersDatabase.map(SQLValue.text) ?? .null
        if rows.count == 1 {
            let row = rows[0]
            var arguments = ServerArguments<InsertOne>()
            arguments[.queue] = .text(row.queue)
            arguments[.executor] = .text(row.executor)
            arguments[.payload] = .text(row.payload)
            arguments[.priority] = .integer(Int64(row.priority))
            arguments[.state] = .text(row.state.rawValue)
            arguments[.maxAttempts] = .integer(Int64(row.maxAttempts))
            arguments[.runAt] = .real(row.runAt)
            arguments[.timeout] = row.timeout.map(SQLValue.real) ?? .null
            arguments[.createdAt] = .real(now)
            arguments[.name] = row.name.map(SQLValue.text) ?? .null
            arguments[.trace] = row.trace.map(SQLValue.text) ?? .null
            arguments[.eventData] = .text(row.eventData)
            arguments[.database] = database
            values = arguments.values
        } else {
            var arguments = ServerArguments<InsertMany>()
            arguments[.count] = .integer(Int64(rows.count))
            arguments[.table] = .text(names.table("jobs"))
            arguments[.queues] = .text(ArrayLiteral.texts(rows.map(\.queue)))
            arguments[.executors] = .text(ArrayLiteral.texts(rows.map(\.executor)))
            arguments[.payloads] = .text(ArrayLiteral.texts(rows.map(\.payload)))
            arguments[.priorities] = .text(ArrayLiteral.integers(rows.map { Int64($0.priority) }))
            arguments[.states] = .text(ArrayLiteral.texts(rows.map(\.state.rawValue)))
            arguments[.maxAttempts] = .text(ArrayLiteral.integers(rows.map { Int64($0.maxAttempts) }))
            arguments[.runAts] = .text(ArrayLiteral.reals(rows.map(\.runAt)))
            arguments[.timeouts] = .text(ArrayLiteral.reals(rows.map(\.timeout)))
            arguments[.names] = .text(ArrayLiteral.texts(rows.map(\.name)))
            arguments[.traces] = .text(ArrayLiteral.texts(rows.map(\.trace)))
            arguments[.createdAt] = .real(now)
            arguments[.eventData] = .text(ArrayLiteral.texts(rows.map(\.eventData)))
            arguments[.database] = database
            values = arguments.values
        }
    }

    /// Runs the statement on the application's connection, prepared there for the store `names`.
    func runPrepared(on connection: PostgresConnection, names: SchemaNames, logger: Logger) async throws
        -> StatementResult
    {
        isOne
            ? try await PostgresSession.runPreparedOnce(
                InsertOneJob.self, values, names: names, on: connection, logger: logger)
            : try await PostgresSession.runPreparedOnce(
                InsertJobs.self, values, names: names, on: connection, logger: logger)
    }

    /// The jobs as stored, from the statement's one row: the ids (in the requests' order) and
    /// the connection's database.
    func jobs(from result: StatementResult) throws -> [Job] {
        guard let row = result.rows.first, row.count == 2 else {
            throw JobQueueError.storeUnavailable("enqueueing returned no answer; nothing was enqueued, retry")
        }
        let ids: [Int64]
        if isOne {
            ids = Int64.from(row[0]).map { [$0] } ?? []
        } else {
            ids = String.from(row[0]).map { $0.split(separator: ",").compactMap { Int64($0) } } ?? []
        }
        if ids.isEmpty, let callersDatabase {
            throw JobQueueError.invalidInput(
                "the application's connection is to database '\(String.from(row[1]) ?? "?")', not to the store's "
                    + "'\(callersDatabase)': connect to the store's database so that both commit together; nothing was enqueued"
            )
        }
        guard ids.count == rows.count else {
            throw JobQueueError.storeUnavailable(
                "enqueueing \(rows.count) job(s) stored \(ids.count); nothing was enqueued, retry")
        }
        return zip(ids, rows).map { id, row in row.job(id: id, createdAt: now) }
    }

    /// The lock, the notifications, and the checks of the application's connection (both
    /// statements' `$1`), as the first CTE every insert reads from.
    fileprivate static let lockCTE = """
        lock AS (
            SELECT \(PostgresServer.lockAndNotify(.shared, .workersAndFollowers))
            WHERE CAST(\(InsertOne.database) AS text) IS NULL OR current_database() = CAST(\(InsertOne.database) AS text)
        )
        """

    /// One job's columns, its `enqueued` event's data, and the application's database.
    fileprivate enum InsertOne: Int32, ServerParameter {
        case database = 1
        case queue, executor, payload, priority, state, maxAttempts, runAt, timeout, createdAt, name, trace, eventData
    }

    fileprivate static let insertOneSQL: String = {
        typealias P = InsertOne
        return """
            WITH \(lockCTE),
            inserted AS (
                INSERT INTO jobq_jobs (queue, executor, payload, priority, state, max_attempts, run_at, timeout, created_at, name,
                    trace_context)
                SELECT \(P.queue), \(P.executor), CAST(\(P.payload) AS json), CAST(\(P.priority) AS integer), \(P.state),
                    CAST(\(P.maxAttempts) AS integer), CAST(\(P.runAt) AS double precision),
                    CAST(\(P.timeout) AS double precision), CAST(\(P.createdAt) AS double precision), \(P.name), \(P.trace)
                FROM lock
                RETURNING id, queue, executor
            ),
            event AS (
                INSERT INTO jobq_events (job_id, kind, queue, executor, data, created_at)
                SELECT id, 'enqueued', queue, executor, CAST(\(P.eventData) AS json), CAST(\(P.createdAt) AS double precision)
                FROM inserted
            )
            SELECT (SELECT id FROM inserted) AS id, current_database() AS database
            """
    }()

    /// A batch's columns as arrays, its size, the jobs table (for its id sequence), the time,
    /// the `enqueued` events' data, and the application's database.
    fileprivate enum InsertMany: Int32, ServerParameter {
        case database = 1
        case count, table, queues, executors, payloads, priorities, states, maxAttempts, runAts, timeouts, names, traces
        case createdAt, eventData
    }

    /// The sequence is looked up once (MATERIALIZED: inlined, the catalog lookup ran once per
    /// job, a sixth of a batch's time). The ids are drawn first and numbered in their own order,
    /// so that the batch's jobs have ids in the order they were given (first in, first out among
    /// equals) whatever order `nextval` ran in. The inserts take `batch` as it comes, in the
    /// requests' order (which is the ids'): sorting it again for each insert cost 0.6 of 9 ms.
    /// Only the ids come back, as one text: the jobs are what was sent (decoding every column of
    /// a thousand rows was a third of a batch's time).
    fileprivate static let insertManySQL: String = {
        typealias P = InsertMany
        return """
            WITH \(lockCTE),
            sequence AS MATERIALIZED (SELECT CAST(pg_get_serial_sequence(\(P.table), 'id') AS regclass) AS name),
            drawn AS (
                SELECT nextval(sequence.name) AS id
                FROM lock, sequence, generate_series(1, CAST(\(P.count) AS integer))
            ),
            ids AS (SELECT id, row_number() OVER (ORDER BY id) AS ordinal FROM drawn),
            batch AS (
                SELECT ids.id, row.queue, row.executor, row.payload, row.priority, row.state, row.max_attempts, row.run_at,
                    row.timeout, row.name, row.trace, row.event_data, row.ordinal
                FROM unnest(CAST(\(P.queues) AS text[]), CAST(\(P.executors) AS text[]), CAST(\(P.payloads) AS text[]),
                    CAST(\(P.priorities) AS integer[]), CAST(\(P.states) AS text[]), CAST(\(P.maxAttempts) AS integer[]),
                    CAST(\(P.runAts) AS double precision[]), CAST(\(P.timeouts) AS double precision[]),
                    CAST(\(P.names) AS text[]), CAST(\(P.traces) AS text[]), CAST(\(P.eventData) AS text[]))
                    WITH ORDINALITY
                    AS row(queue, executor, payload, priority, state, max_attempts, run_at, timeout, name, trace, event_data, ordinal)
                JOIN ids ON ids.ordinal = row.ordinal
            ),
            inserted AS (
                INSERT INTO jobq_jobs (id, queue, executor, payload, priority, state, max_attempts, run_at, timeout, created_at,
                    name, trace_context)
                OVERRIDING SYSTEM VALUE
                SELECT id, queue, executor, CAST(payload AS json), priority, state, max_attempts, run_at, timeout,
                    CAST(\(P.createdAt) AS double precision), name, trace
                FROM batch
            ),
            event AS (
                INSERT INTO jobq_events (job_id, kind, queue, executor, data, created_at)
                SELECT id, 'enqueued', queue, executor, CAST(event_data AS json), CAST(\(P.createdAt) AS double precision)
                FROM batch
            )
            SELECT (SELECT string_agg(CAST(id AS text), ',' ORDER BY ordinal) FROM batch) AS ids,
                current_database() AS database
            """
    }()
}

private enum InsertOneJob: StatementText {
    static let sql = SelfContainedInsert.insertOneSQL
}

private enum InsertJobs: StatementText {
    static let sql = SelfContainedInsert.insertManySQL
}
