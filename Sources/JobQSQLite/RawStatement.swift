import GRDB
import GRDBSQLite
import JobQCore
import JobQSQL

/// One of GRDB's cached statements, bound, stepped and read through the SQLite C API.
///
/// The hot path (claims, completions, inserts, events) runs a few statements per job; GRDB's
/// argument arrays and `Row` values box every column, which cost more than SQLite's own work
/// there. Statements stay in GRDB's cache, and run inside GRDB's transactions, so nothing else
/// changes: errors become `DatabaseError`s and roll the transaction back as usual.
///
/// ```swift
/// let insert = try RawStatement(db, sql: "INSERT INTO events (job_id, kind, created_at) VALUES (?, ?, ?)")
/// insert.bind(1, job); insert.bind(2, "started"); insert.bind(3, now)
/// try insert.run()
/// ```
struct RawStatement {
    /// Keeps GRDB's statement (and so the handle) alive while it is used.
    private let statement: Statement
    private let handle: OpaquePointer
    private let connection: OpaquePointer?

    init(_ db: Database, sql: String) throws {
        statement = try db.cachedStatement(sql: sql)
        handle = statement.sqliteStatement
        connection = db.sqliteConnection
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
    }

    func bind(_ index: Int32, _ value: Int64) { sqlite3_bind_int64(handle, index, value) }
    func bind(_ index: Int32, _ value: Int) { sqlite3_bind_int64(handle, index, Int64(value)) }
    func bind(_ index: Int32, _ value: Double) { sqlite3_bind_double(handle, index, value) }
    func bind(_ index: Int32, _ value: Double?) {
        if let value { sqlite3_bind_double(handle, index, value) } else { sqlite3_bind_null(handle, index) }
    }
    func bind(_ index: Int32, _ value: Int64?) {
        if let value { sqlite3_bind_int64(handle, index, value) } else { sqlite3_bind_null(handle, index) }
    }

    func bind(_ index: Int32, _ value: String?) {
        guard var value else {
            sqlite3_bind_null(handle, index)
            return
        }
        // Native strings are contiguous UTF-8, so this does not copy; SQLite copies (TRANSIENT).
        value.withUTF8 { bytes in
            guard let base = bytes.baseAddress, !bytes.isEmpty else {
                _ = sqlite3_bind_text(handle, index, "", 0, rawTransient)
                return
            }
            _ = UnsafeRawPointer(base).withMemoryRebound(to: CChar.self, capacity: bytes.count) { text in
                sqlite3_bind_text(handle, index, text, Int32(bytes.count), rawTransient)
            }
        }
    }

    /// Steps once. Returns true when a row is available (read it with the column accessors).
    func step() throws -> Bool {
        switch sqlite3_step(handle) {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        case let code:
            let message = connection.map { String(cString: sqlite3_errmsg($0)) } ?? "error \(code)"
            sqlite3_reset(handle)
            throw DatabaseError(resultCode: ResultCode(rawValue: code), message: message, sql: statement.sql)
        }
    }

    /// Runs a statement that returns no rows, and resets it.
    func run() throws {
        while try step() {}
        sqlite3_reset(handle)
    }

    /// Ends a statement whose rows were read, so it releases what it holds.
    func reset() { sqlite3_reset(handle) }

    func int64(_ column: Int32) -> Int64 { sqlite3_column_int64(handle, column) }
    func double(_ column: Int32) -> Double { sqlite3_column_double(handle, column) }
    func isNull(_ column: Int32) -> Bool { sqlite3_column_type(handle, column) == SQLITE_NULL }
    func optionalDouble(_ column: Int32) -> Double? { isNull(column) ? nil : double(column) }
    func optionalInt64(_ column: Int32) -> Int64? { isNull(column) ? nil : int64(column) }

    func optionalString(_ column: Int32) -> String? {
        guard let text = sqlite3_column_text(handle, column) else { return nil }
        let count = Int(sqlite3_column_bytes(handle, column))
        return String(decoding: UnsafeBufferPointer(start: text, count: count), as: UTF8.self)
    }
}

extension RawStatement: ColumnReader {}

extension Row: ColumnReader {
    package func int64(_ column: Int32) -> Int64 { self[Int(column)] }
    package func double(_ column: Int32) -> Double { self[Int(column)] }
    package func optionalDouble(_ column: Int32) -> Double? { self[Int(column)] }
    package func optionalString(_ column: Int32) -> String? { self[Int(column)] }
    package func optionalInt64(_ column: Int32) -> Int64? { self[Int(column)] }
}

/// SQLITE_TRANSIENT: SQLite copies bound text before the call returns.
private let rawTransient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
