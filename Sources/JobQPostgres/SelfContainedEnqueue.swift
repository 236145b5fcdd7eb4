import Foundation
import JobQCore
import JobQSQL

/// Enqueueing on PostgreSQL. Jobs that are only their own row and `enqueued` event go in one
/// statement: one round trip for a job, two for a batch of any size (its ids, then every row
/// by arrays). Any other batch (a unique key, a lane, a dependency, a batch) is the shared
/// SQL's exclusive transaction.
///
/// The statement takes the shared write lock and queues its notifications first (its `lock`
/// CTE, which the INSERT reads from, so it is taken before any row is written), inserts the
/// jobs, and their events from what the insert returned: the same rows, lock and
/// notifications as a write transaction (`ServerStore.write`) without BEGIN and COMMIT.
extension ServerStore {
    func enqueue(_ requests: [JobRequest]) async throws -> [Enqueued] {
        guard requests.allSatisfy(\.isSelfContained) else {
            return try await enqueueInTransaction(requests, lock: .exclusive)
        }
        try SharedSQL.validate(requests)
        return try await insertSelfContainedJobs(requests).map { Enqueued(job: $0, existed: false) }
    }

    private func insertSelfContainedJobs(_ requests: [JobRequest]) async throws -> [Job] {
        guard !requests.isEmpty else { return [] }
        let now = SharedSQL.now()
        let jobs =
            requests.count == 1
            ? try await insertOne(requests[0], now: now) : try await insertMany(requests, now: now)
        commitObservers.callAll()
        return jobs
    }

    fileprivate static let lockCTE = "lock AS (SELECT \(PostgresServer.lockAndNotify(.shared, .workersAndFollowers)))"

    /// One job's columns, and its `enqueued` event's data.
    fileprivate enum InsertOne: Int32, ServerParameter {
        case queue = 1
        case executor, payload, priority, state, maxAttempts, runAt, timeout, createdAt, name, trace, eventData
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
            SELECT id FROM inserted
            """
    }()

    private func insertOne(_ request: JobRequest, now: Double) async throws -> [Job] {
        let row = SelfContainedJobRow(request, now: now)
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
        let result = try await server.autocommit(InsertOneJob.self, arguments.values, line: .enqueues)
        guard let id = result.rows.first?.first.flatMap(Int64.from) else {
            throw JobQueueError.storeUnavailable("enqueueing returned no job id; retry")
        }
        return [row.job(id: id, createdAt: now)]
    }

    /// Ids come first, from the jobs' own sequence: the events are then matched to their jobs
    /// by id, whatever order the INSERT returns its rows in. Nothing but the count comes back:
    /// the jobs are what was sent (decoding every column of a thousand rows was a third of a
    /// batch's time).
    /// A batch's columns as arrays (ids first, from the jobs' sequence), the time, and the
    /// `enqueued` events' data.
    fileprivate enum InsertMany: Int32, ServerParameter {
        case ids = 1
        case queues, executors, payloads, priorities, states, maxAttempts, runAts, timeouts, names, traces, createdAt
        case eventData
    }

    fileprivate static let insertManySQL: String = {
        typealias P = InsertMany
        return """
            WITH \(lockCTE),
            inserted AS (
                INSERT INTO jobq_jobs (id, queue, executor, payload, priority, state, max_attempts, run_at, timeout, created_at,
                    name, trace_context)
                OVERRIDING SYSTEM VALUE
                SELECT row.id, row.queue, row.executor, CAST(row.payload AS json), row.priority, row.state, row.max_attempts,
                    row.run_at, row.timeout, CAST(\(P.createdAt) AS double precision), row.name, row.trace
                FROM lock, unnest(CAST(\(P.ids) AS bigint[]), CAST(\(P.queues) AS text[]), CAST(\(P.executors) AS text[]),
                    CAST(\(P.payloads) AS text[]), CAST(\(P.priorities) AS integer[]), CAST(\(P.states) AS text[]),
                    CAST(\(P.maxAttempts) AS integer[]), CAST(\(P.runAts) AS double precision[]),
                    CAST(\(P.timeouts) AS double precision[]), CAST(\(P.names) AS text[]), CAST(\(P.traces) AS text[]))
                    AS row(id, queue, executor, payload, priority, state, max_attempts, run_at, timeout, name, trace)
                ORDER BY row.id
                RETURNING id, queue, executor
            ),
            event AS (
                INSERT INTO jobq_events (job_id, kind, queue, executor, data, created_at)
                SELECT inserted.id, 'enqueued', inserted.queue, inserted.executor, CAST(data.text AS json),
                    CAST(\(P.createdAt) AS double precision)
                FROM inserted JOIN unnest(CAST(\(P.ids) AS bigint[]), CAST(\(P.eventData) AS text[])) AS data(id, text)
                    ON data.id = inserted.id
                ORDER BY inserted.id
            )
            SELECT COUNT(*) AS inserted FROM inserted
            """
    }()

    private func insertMany(_ requests: [JobRequest], now: Double) async throws -> [Job] {
        let ids = try await server.autocommit(
            NextJobIDs.self,
            [.integer(Int64(requests.count)), .text(server.settings.schemaNames.table("jobs"))], line: .enqueues
        ).rows.compactMap { $0.first.flatMap(Int64.from) }.sorted()
        guard ids.count == requests.count else {
            throw JobQueueError.storeUnavailable(
                "PostgreSQL handed out \(ids.count) job ids for \(requests.count) jobs; nothing was enqueued, retry")
        }
        let rows = requests.map { SelfContainedJobRow($0, now: now) }
        var arguments = ServerArguments<InsertMany>()
        arguments[.ids] = .text(ArrayLiteral.integers(ids))
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
        let result = try await server.autocommit(InsertJobs.self, arguments.values, line: .enqueues)
        let inserted = result.rows.first?.first.flatMap(Int64.from) ?? 0
        guard inserted == Int64(requests.count) else {
            throw JobQueueError.storeUnavailable(
                "enqueueing \(requests.count) jobs inserted \(inserted); nothing was enqueued, retry")
        }
        return zip(ids, rows).map { id, row in row.job(id: id, createdAt: now) }
    }
}

private enum InsertOneJob: StatementText {
    static let sql = ServerStore.insertOneSQL
}

private enum NextJobIDs: StatementText {
    /// $2: the jobs table, qualified with the store's schema.
    static let sql = "SELECT nextval(pg_get_serial_sequence($2, 'id')) FROM generate_series(1, CAST($1 AS integer))"
}

private enum InsertJobs: StatementText {
    static let sql = ServerStore.insertManySQL
}

/// One self-contained job's column values and its `enqueued` event's data.
private struct SelfContainedJobRow {
    let queue: String
    let executor: String
    let payload: String
    let priority: Int
    let state: JobState
    let maxAttempts: Int
    let runAt: Double
    let timeout: Double?
    let name: String?
    let trace: String?
    let eventData: String

    /// The job as the store now holds it: its row as a fresh insert leaves it, in the column
    /// order of `Job.columns` (a test compares it with the stored job, field by field).
    func job(id: Int64, createdAt: Double) -> Job {
        let row: [SQLValue] = [
            .integer(id), .text(queue), .text(executor), .text(state.rawValue), .integer(Int64(priority)),
            .text(payload), .null, .null, .integer(0), .integer(Int64(maxAttempts)), .real(runAt),
            timeout.map(SQLValue.real) ?? .null, .real(createdAt), .null, .null, .null, .null, .null, .null,
            .integer(0), name.map(SQLValue.text) ?? .null, .null, .null, .null, .null, .integer(0), .null, .null,
            .null, .null, .null, .null, .null
        ]
        return Job(SQLRow(names: [], values: row))
    }

    init(_ request: JobRequest, now: Double) {
        let options = request.options
        queue = options.queue
        executor = request.executor
        payload = SQLDialect.postgres.storedJSON(request.payloadJSON)
        priority = options.priority
        runAt = options.runAt?.timeIntervalSince1970 ?? now
        state = runAt > now ? .scheduled : .ready
        maxAttempts = options.maxAttempts
        timeout = options.timeout?.inSeconds
        name = options.name
        trace = request.traceContextJSON
        eventData = EventData.enqueued(state: state, runAt: runAt, priority: priority).text
    }
}

/// PostgreSQL array literals (`{1,2}`, `{"a","b\"c",NULL}`), sent as text and cast to arrays
/// by the statement: one parameter carries a column of any number of rows.
enum ArrayLiteral {
    static func integers(_ values: [Int64]) -> String {
        "{" + values.map(String.init).joined(separator: ",") + "}"
    }

    static func reals(_ values: [Double?]) -> String {
        // Swift's description of a Double is the shortest text that reads back to it exactly.
        "{" + values.map { $0.map { "\($0)" } ?? "NULL" }.joined(separator: ",") + "}"
    }

    static func reals(_ values: [Double]) -> String { reals(values.map(Optional.some)) }

    static func texts(_ values: [String?]) -> String {
        "{" + values.map { $0.map(quoted) ?? "NULL" }.joined(separator: ",") + "}"
    }

    static func texts(_ values: [String]) -> String { texts(values.map(Optional.some)) }

    /// An element in double quotes, with its backslashes and double quotes escaped.
    private static func quoted(_ text: String) -> String {
        var result = "\""
        result.reserveCapacity(text.utf8.count + 2)
        for character in text.unicodeScalars {
            if character == "\\" || character == "\"" { result.unicodeScalars.append("\\") }
            result.unicodeScalars.append(character)
        }
        result.unicodeScalars.append("\"")
        return result
    }
}
