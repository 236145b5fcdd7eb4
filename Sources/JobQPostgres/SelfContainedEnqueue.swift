import Foundation
import JobQCore

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
        try StoreSQL.validate(requests)
        return try await insertSelfContainedJobs(requests).map { Enqueued(job: $0, existed: false) }
    }

    private func insertSelfContainedJobs(_ requests: [JobRequest]) async throws -> [Job] {
        guard !requests.isEmpty else { return [] }
        let now = StoreSQL.now()
        let jobs =
            requests.count == 1
            ? try await insertOne(requests[0], now: now) : try await insertMany(requests, now: now)
        commitObservers.callAll()
        return jobs
    }

    fileprivate static let lockCTE = "lock AS (SELECT \(PostgresServer.lockAndNotify(.shared, .workersAndFollowers)))"

    fileprivate static let insertOneSQL = """
        WITH \(lockCTE),
        inserted AS (
            INSERT INTO jobq_jobs (queue, executor, payload, priority, state, max_attempts, run_at, timeout, created_at, name,
                trace_context)
            SELECT $1, $2, CAST($3 AS json), CAST($4 AS integer), $5, CAST($6 AS integer), CAST($7 AS double precision),
                CAST($8 AS double precision), CAST($9 AS double precision), $10, $11 FROM lock
            RETURNING id, queue, executor
        ),
        event AS (
            INSERT INTO jobq_events (job_id, kind, queue, executor, data, created_at)
            SELECT id, 'enqueued', queue, executor, CAST($12 AS json), CAST($9 AS double precision) FROM inserted
        )
        SELECT id FROM inserted
        """

    private func insertOne(_ request: JobRequest, now: Double) async throws -> [Job] {
        let row = SelfContainedJobRow(request, now: now)
        let result = try await server.autocommit(
            InsertOneJob.self,
            [
                .text(row.queue), .text(row.executor), .text(row.payload), .integer(Int64(row.priority)),
                .text(row.state.rawValue), .integer(Int64(row.maxAttempts)), .real(row.runAt),
                row.timeout.map(SQLValue.real) ?? .null, .real(now), row.name.map(SQLValue.text) ?? .null,
                row.trace.map(SQLValue.text) ?? .null, .text(row.eventData)
            ], line: .enqueues)
        guard let id = result.rows.first?.first.flatMap(Int64.from) else {
            throw JobQueueError.storeUnavailable("enqueueing returned no job id; retry")
        }
        return [row.job(id: id, createdAt: now)]
    }

    /// Ids come first, from the jobs' own sequence: the events are then matched to their jobs
    /// by id, whatever order the INSERT returns its rows in. Nothing but the count comes back:
    /// the jobs are what was sent (decoding every column of a thousand rows was a third of a
    /// batch's time).
    fileprivate static let insertManySQL = """
        WITH \(lockCTE),
        inserted AS (
            INSERT INTO jobq_jobs (id, queue, executor, payload, priority, state, max_attempts, run_at, timeout, created_at,
                name, trace_context)
            OVERRIDING SYSTEM VALUE
            SELECT row.id, row.queue, row.executor, CAST(row.payload AS json), row.priority, row.state, row.max_attempts,
                row.run_at, row.timeout, CAST($12 AS double precision), row.name, row.trace
            FROM lock, unnest(CAST($1 AS bigint[]), CAST($2 AS text[]), CAST($3 AS text[]), CAST($4 AS text[]),
                CAST($5 AS integer[]), CAST($6 AS text[]), CAST($7 AS integer[]), CAST($8 AS double precision[]),
                CAST($9 AS double precision[]), CAST($10 AS text[]), CAST($11 AS text[]))
                AS row(id, queue, executor, payload, priority, state, max_attempts, run_at, timeout, name, trace)
            ORDER BY row.id
            RETURNING id, queue, executor
        ),
        event AS (
            INSERT INTO jobq_events (job_id, kind, queue, executor, data, created_at)
            SELECT inserted.id, 'enqueued', inserted.queue, inserted.executor, CAST(data.text AS json),
                CAST($12 AS double precision)
            FROM inserted JOIN unnest(CAST($1 AS bigint[]), CAST($13 AS text[])) AS data(id, text) ON data.id = inserted.id
            ORDER BY inserted.id
        )
        SELECT COUNT(*) AS inserted FROM inserted
        """

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
        let result = try await server.autocommit(
            InsertJobs.self,
            [
                .text(ArrayLiteral.integers(ids)),
                .text(ArrayLiteral.texts(rows.map(\.queue))),
                .text(ArrayLiteral.texts(rows.map(\.executor))),
                .text(ArrayLiteral.texts(rows.map(\.payload))),
                .text(ArrayLiteral.integers(rows.map { Int64($0.priority) })),
                .text(ArrayLiteral.texts(rows.map(\.state.rawValue))),
                .text(ArrayLiteral.integers(rows.map { Int64($0.maxAttempts) })),
                .text(ArrayLiteral.reals(rows.map(\.runAt))),
                .text(ArrayLiteral.reals(rows.map(\.timeout))),
                .text(ArrayLiteral.texts(rows.map(\.name))),
                .text(ArrayLiteral.texts(rows.map(\.trace))),
                .real(now),
                .text(ArrayLiteral.texts(rows.map(\.eventData)))
            ], line: .enqueues)
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
        eventData = StoreSQL.enqueuedEventData(
            state: state, runAt: Date(timeIntervalSince1970: runAt), priority: priority, waitingFor: 0, lane: nil)
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
