import Foundation
import GRDBSQLite
import JobQCommandLine

/// One SQLite connection through the C API, for the bench's raw baselines (jobq's statements
/// raw, the minimal raw queue, its latency across processes): opened in WAL mode with jobq's
/// `synchronous` setting, errors named after the baseline that met them.
final class RawConnection {
    private var db: OpaquePointer?
    /// Which baseline this is, at the start of every error it throws.
    private let label: String

    /// Opens `path` (creating it with `create`) in WAL mode, `synchronous=NORMAL` (FULL when
    /// `durable`), waiting up to 10 s for another process's write lock.
    init(path: String, label: String, create: Bool = false, durable: Bool = false) throws {
        self.label = label
        let flags = SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0)
        guard sqlite3_open_v2(path, &db, flags, nil) == SQLITE_OK else {
            throw CLIError.failure("\(label): cannot open \(path)")
        }
        try exec(
            "PRAGMA journal_mode = WAL; PRAGMA synchronous = \(durable ? "FULL" : "NORMAL"); PRAGMA busy_timeout = 10000"
        )
    }

    /// Closes once the statements still prepared are finalized (their owners do that).
    deinit { sqlite3_close_v2(db) }

    func exec(_ sql: String) throws {
        var message: UnsafeMutablePointer<CChar>?
        guard sqlite3_exec(db, sql, nil, nil, &message) == SQLITE_OK else {
            let text = message.map { String(cString: $0) } ?? "?"
            sqlite3_free(message)
            throw CLIError.failure("\(label): \(text) in \(sql.prefix(80))")
        }
    }

    /// A statement prepared to be kept; the caller finalizes it.
    func prepare(_ sql: String) throws -> OpaquePointer {
        var statement: OpaquePointer?
        guard sqlite3_prepare_v3(db, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil) == SQLITE_OK,
            let statement
        else {
            throw CLIError.failure("\(label): cannot prepare \(sql.prefix(80)): \(String(cString: sqlite3_errmsg(db)))")
        }
        return statement
    }
}
