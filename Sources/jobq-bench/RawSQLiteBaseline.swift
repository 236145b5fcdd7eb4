import Foundation
import GRDBSQLite
import JobQ
import JobQSQL

/// The same statements jobq runs, driven straight through the SQLite C API, with no jobq code:
/// what SQLite itself can do on this machine, measured in the same run as jobq.
///
/// "The same statements" includes the event feed as jobq writes it (the `enqueued` event's data
/// in the job's row, a `started` and a `succeeded` event row, with the statements that keep the
/// jobs' and events' id counters level) and the few per-transaction statements (due jobs made
/// ready and paused queues read before a claim; whether tracking sets exist before
/// completions). With `events: false` it runs the job statements alone, which shows what the
/// event feed costs.
final class RawSQLite {
    private let connection: RawConnection
    let path: String

    /// Opens `path` (a store jobq created, so the schema and indexes are jobq's) in WAL mode
    /// with `synchronous=NORMAL` (or FULL when `durable`), as jobq does.
    init(path: String, durable: Bool = false) throws {
        self.path = path
        connection = try RawConnection(path: path, label: "raw SQLite", durable: durable)
    }

    deinit {
        for statement in cached.values { sqlite3_finalize(statement) }
    }

    func exec(_ sql: String) throws { try connection.exec(sql) }

    private func prepare(_ sql: String) throws -> OpaquePointer? { try connection.prepare(sql) }

    private static let insertSQL = """
        INSERT INTO jobq_jobs (queue, executor, payload, priority, state, max_attempts, run_at, timeout, created_at, name, batch,
            enqueued_data)
        VALUES ('default', 'sum', json(?), 0, 'ready', 3, ?, NULL, ?, NULL, NULL, ?) RETURNING id
        """
    // jobq's SQLite claim: read the ready jobs in claim order, then mark the ids claimed, up to
    // 128 per UPDATE.
    private static let claimReadSQL = """
        SELECT id, attempt + 1, payload FROM jobq_jobs WHERE state = 'ready' AND queue = 'default'
        ORDER BY priority DESC, run_at, id LIMIT ?
        """
    private static func claimMarkSQL(_ count: Int) -> String {
        """
        UPDATE jobq_jobs SET state = 'running', attempt = attempt + 1, worker_id = 'raw', lease_until = ?1, started_at = ?2
        WHERE id IN (\((0..<count).map { "?\(3 + $0)" }.joined(separator: ", "))) AND state = 'ready'
        """
    }
    private static let promoteSQL =
        // jobq's due jobs' predicate, spelled as their index spells it (SQLite walks a partial
        // index only for a query that states its predicate).
        "UPDATE jobq_jobs SET state = 'ready' WHERE \(StoreSQL.dueState) AND run_at <= ?"
    private static let pausedSQL = "SELECT name FROM jobq_queues WHERE paused"
    private static let trackingSQL = "SELECT EXISTS (SELECT 1 FROM jobq_tracking_members)"
    // jobq's plain successes: up to 64 per UPDATE, each row under the worker's fence; as jobq
    // does on SQLite, no RETURNING (the count of rows changed tells whether the fence refused any).
    private static func completeSQL(_ count: Int) -> String {
        """
        UPDATE jobq_jobs SET state = 'succeeded', result = v.column3, error = NULL, finished_at = ?1, lease_until = NULL
        FROM (VALUES \((0..<count).map { "(?\(2 + 3 * $0), ?\(3 + 3 * $0), ?\(4 + 3 * $0))" }.joined(separator: ", "))) AS v
        WHERE jobq_jobs.id = v.column1 AND jobq_jobs.state = 'running' AND jobq_jobs.worker_id = 'raw' AND jobq_jobs.attempt = v.column2
        """
    }

    /// Statements prepared once each, by their text (the multi-row ones by row count).
    private var cached: [String: OpaquePointer?] = [:]

    private func statement(_ sql: String) throws -> OpaquePointer? {
        if let statement = cached[sql] { return statement }
        let statement = try prepare(sql)
        cached[sql] = statement
        return statement
    }

    /// Appends `events` rows as jobq does: one INSERT per 64 rows, between the statements that
    /// keep the jobs' and the events' id counters level.
    private func events(_ rows: [(job: Int64, data: String)], kind: String, now: Double) throws {
        let level = try statement(EventOutbox.levelCountersSQL)
        run(level)
        defer { run(level) }
        // jobq writes a claim's or a completion batch's events with one INSERT of up to 64 rows.
        for chunk in rows.chunks(of: 64) {
            let statement = try self.statement(
                "INSERT INTO jobq_events (job_id, kind, queue, executor, batch, data, created_at) VALUES "
                    + Array(repeating: "(?, ?, 'default', 'sum', NULL, ?, ?)", count: chunk.count).joined(
                        separator: ", "))
            for (offset, row) in chunk.enumerated() {
                let base = Int32(offset * 4)
                sqlite3_bind_int64(statement, base + 1, row.job)
                sqlite3_bind_text(statement, base + 2, kind, -1, sqliteTransient)
                sqlite3_bind_text(statement, base + 3, row.data, -1, sqliteTransient)
                sqlite3_bind_double(statement, base + 4, now)
            }
            _ = sqlite3_step(statement)
            sqlite3_reset(statement)
        }
    }

    private func run(_ statement: OpaquePointer?, bind: (OpaquePointer?) -> Void = { _ in }) {
        bind(statement)
        while sqlite3_step(statement) == SQLITE_ROW {}
        sqlite3_reset(statement)
    }

    /// Inserts `count` jobs, `batch` per transaction, each with its `enqueued` event's data in
    /// its row (as jobq keeps it on SQLite) unless `events` is false. Returns inserts per second.
    func insert(count: Int, batch: Int, events: Bool = true) throws -> Double {
        let statement = try prepare(Self.insertSQL)
        defer { sqlite3_finalize(statement) }
        let enqueuedData = #"{"state":"ready","runAt":"2026-11-21T17:00:00.000Z","priority":0}"#
        let payload = #"{"a":1,"b":2}"#
        let start = ContinuousClock.now
        var done = 0
        while done < count {
            try exec("BEGIN IMMEDIATE")
            for _ in 0..<min(batch, count - done) {
                let now = Date().timeIntervalSince1970
                sqlite3_bind_text(statement, 1, payload, -1, sqliteTransient)
                sqlite3_bind_double(statement, 2, now)
                sqlite3_bind_double(statement, 3, now)
                if events {
                    sqlite3_bind_text(statement, 4, enqueuedData, -1, sqliteTransient)
                } else {
                    sqlite3_bind_null(statement, 4)
                }
                while sqlite3_step(statement) == SQLITE_ROW {}
                sqlite3_reset(statement)
                done += 1
            }
            try exec("COMMIT")
        }
        return Double(count) / (ContinuousClock.now - start).inSeconds
    }

    /// Claims and completes every ready job, `batch` per claim transaction and per completion
    /// transaction, storing a small result, with jobq's `started` and `succeeded` events and
    /// per-transaction checks unless `events` is false. Returns jobs per second.
    /// `storesResult: false` completes with a NULL result (and no result in the event), which
    /// shows what keeping results costs.
    func claimAndComplete(batch: Int, events: Bool = true, storesResult: Bool = true) throws -> (
        jobs: Int, perSecond: Double
    ) {
        let claim = try prepare(Self.claimReadSQL)
        let promote = try prepare(Self.promoteSQL)
        let paused = try prepare(Self.pausedSQL)
        let tracking = try prepare(Self.trackingSQL)
        defer {
            for statement in [claim, promote, paused, tracking] { sqlite3_finalize(statement) }
        }
        let start = ContinuousClock.now
        var total = 0
        while true {
            let now = Date().timeIntervalSince1970
            try exec("BEGIN IMMEDIATE")
            if events {
                run(promote) { sqlite3_bind_double($0, 1, now) }
                run(paused)
            }
            sqlite3_bind_int64(claim, 1, Int64(batch))
            var claimed: [(id: Int64, attempt: Int64)] = []
            while sqlite3_step(claim) == SQLITE_ROW {
                claimed.append((sqlite3_column_int64(claim, 0), sqlite3_column_int64(claim, 1)))
                _ = sqlite3_column_text(claim, 2)
            }
            sqlite3_reset(claim)
            for chunk in claimed.chunks(of: 128) {
                let mark = try statement(Self.claimMarkSQL(chunk.count))
                sqlite3_bind_double(mark, 1, now + 30)
                sqlite3_bind_double(mark, 2, now)
                for (offset, job) in chunk.enumerated() { sqlite3_bind_int64(mark, Int32(3 + offset), job.id) }
                run(mark)
            }
            if events {
                try self.events(
                    claimed.map { (job: $0.id, data: #"{"attempt":\#($0.attempt),"worker":"raw"}"#) }, kind: "started",
                    now: now)
            }
            try exec("COMMIT")
            if claimed.isEmpty { break }
            try exec("BEGIN IMMEDIATE")
            if events { run(tracking) }
            for chunk in claimed.chunks(of: 64) {
                let complete = try statement(Self.completeSQL(chunk.count))
                sqlite3_bind_double(complete, 1, Date().timeIntervalSince1970)
                for (offset, job) in chunk.enumerated() {
                    let base = Int32(2 + 3 * offset)
                    sqlite3_bind_int64(complete, base, job.id)
                    sqlite3_bind_int64(complete, base + 1, job.attempt)
                    if storesResult {
                        sqlite3_bind_text(complete, base + 2, #"{"sum":3}"#, -1, sqliteTransient)
                    } else {
                        sqlite3_bind_null(complete, base + 2)
                    }
                }
                run(complete)
            }
            if events {
                let result = storesResult ? #","result":{"sum":3}"# : ""
                try self.events(
                    claimed.map { (job: $0.id, data: #"{"attempt":\#($0.attempt)\#(result)}"#) }, kind: "succeeded",
                    now: now)
            }
            try exec("COMMIT")
            total += claimed.count
        }
        return (total, Double(total) / (ContinuousClock.now - start).inSeconds)
    }

    /// Fills the store fast with generated rows (setup for the large-store workloads, not a
    /// measurement): `count` jobs of `queue` in `state` (a succeeded or dead one finished a
    /// minute ago), run at `runAtOffset` from now; `payload` is an SQL expression of the row
    /// number `i`.
    func fill(
        count: Int, state: String, runAtOffset: Double, queue: String = "default",
        payload: String = #"'{"a":' || i || ',"b":1}'"#
    ) throws {
        let now = Date().timeIntervalSince1970
        let ended = state == "succeeded" || state == "dead"
        let finished = ended ? "\(now - 60)" : "NULL"
        let result = state == "succeeded" ? #"'{"sum":3}'"# : "NULL"
        let error = state == "dead" ? "'failed on purpose'" : "NULL"
        try exec("BEGIN IMMEDIATE")
        try exec(
            """
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < \(count))
            INSERT INTO jobq_jobs (queue, executor, payload, priority, state, attempt, max_attempts, run_at, created_at, finished_at, result, error)
            SELECT '\(queue)', 'sum', \(payload), 0, '\(state)', \(ended ? (state == "dead" ? 3 : 1) : 0), 3,
                \(now + runAtOffset), \(now), \(finished), \(result), \(error) FROM n
            """)
        try exec("COMMIT")
        // Fold the fill into the database file now, so that the workload measured next does not
        // pay for checkpointing a hundred megabytes of setup.
        try exec("PRAGMA wal_checkpoint(TRUNCATE)")
    }
}

/// SQLITE_TRANSIENT: SQLite copies the bound text before the call returns.
let sqliteTransient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
