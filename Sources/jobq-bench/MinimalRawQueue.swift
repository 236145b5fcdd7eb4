import Foundation
import GRDBSQLite

/// The physical limit beside jobq: the smallest queue SQLite can be on the same disk, with no
/// jobq schema at all. One table (id, state, payload, result), one index, the C API; single
/// inserts each in its own transaction, and claim + complete in transactions of `batch` jobs.
/// No events, no leases, no retries, no fences: what any queue on SQLite pays at least.
final class MinimalRawQueue {
    private let connection: RawConnection

    init(path: String, durable: Bool) throws {
        connection = try RawConnection(path: path, label: "minimal raw queue", create: true, durable: durable)
        try exec(
            """
            CREATE TABLE IF NOT EXISTS q (id INTEGER PRIMARY KEY, state INTEGER NOT NULL, payload TEXT NOT NULL, result TEXT);
            CREATE INDEX IF NOT EXISTS q_ready ON q (state, id);
            """)
    }

    private func exec(_ sql: String) throws { try connection.exec(sql) }

    private func prepare(_ sql: String) throws -> OpaquePointer? { try connection.prepare(sql) }

    /// Inserts `count` ready jobs, one per transaction (or `batch` per transaction). Returns
    /// inserts per second.
    func insert(count: Int, batch: Int = 1) throws -> Double {
        let insert = try prepare("INSERT INTO q (state, payload) VALUES (0, ?)")
        defer { sqlite3_finalize(insert) }
        let start = ContinuousClock.now
        var done = 0
        while done < count {
            try exec("BEGIN IMMEDIATE")
            for _ in 0..<min(batch, count - done) {
                sqlite3_bind_text(insert, 1, #"{"a":1,"b":2}"#, -1, sqliteTransient)
                _ = sqlite3_step(insert)
                sqlite3_reset(insert)
                done += 1
            }
            try exec("COMMIT")
        }
        return Double(count) / (ContinuousClock.now - start).inSeconds
    }

    /// Claims (state 0 -> 1) and completes (1 -> 2, with a result) every ready job, `batch` per
    /// claim transaction and per completion transaction. Returns jobs per second.
    func claimAndComplete(batch: Int) throws -> (jobs: Int, perSecond: Double) {
        let claim = try prepare(
            "UPDATE q SET state = 1 WHERE id IN (SELECT id FROM q WHERE state = 0 ORDER BY id LIMIT ?) RETURNING id, payload"
        )
        let complete = try prepare("UPDATE q SET state = 2, result = ? WHERE id = ?")
        defer {
            sqlite3_finalize(claim)
            sqlite3_finalize(complete)
        }
        let start = ContinuousClock.now
        var total = 0
        while true {
            try exec("BEGIN IMMEDIATE")
            sqlite3_bind_int64(claim, 1, Int64(batch))
            var ids: [Int64] = []
            while sqlite3_step(claim) == SQLITE_ROW {
                ids.append(sqlite3_column_int64(claim, 0))
                _ = sqlite3_column_text(claim, 1)
            }
            sqlite3_reset(claim)
            try exec("COMMIT")
            if ids.isEmpty { break }
            try exec("BEGIN IMMEDIATE")
            for id in ids {
                sqlite3_bind_text(complete, 1, #"{"sum":3}"#, -1, sqliteTransient)
                sqlite3_bind_int64(complete, 2, id)
                _ = sqlite3_step(complete)
                sqlite3_reset(complete)
            }
            try exec("COMMIT")
            total += ids.count
        }
        return (total, Double(total) / (ContinuousClock.now - start).inSeconds)
    }
}
