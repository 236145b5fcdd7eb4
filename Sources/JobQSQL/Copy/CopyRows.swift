import Foundation
import JobQCore

/// Rows as a copy moves them: read from one store's table, written to the other's with their
/// own keys.
enum CopyRows {
    /// Values per INSERT at most: well below SQLite's limit on parameters (32,766) and
    /// PostgreSQL's (65,535).
    static let maximumValues = 8_000

    /// Inserts `rows` of `columns` into `table` (its SQL name), skipping a row whose key is
    /// there already. `keepingIDs`: the rows carry their ids, which PostgreSQL generates itself
    /// unless told otherwise.
    static func insert(
        _ db: some SQLTransaction, into table: String, columns: [String], rows: [[SQLValue]], keepingIDs: Bool
    ) throws {
        guard !rows.isEmpty, !columns.isEmpty else { return }
        if db.dialect == .postgres {
            // A page is several statements of up to 8 MiB each, and the transaction is idle
            // while the next is encoded: seconds for megabyte payloads on a loaded machine,
            // past the store's bound on idle transactions (5 s by default, meant for a stuck
            // application), which ended the copy's connection. For this transaction only, and
            // before the rows are looked through for NULs: that scan of a page of megabyte
            // payloads, with the transaction open, once took past the bound on its own.
            try db.execute(sql: "SET LOCAL idle_in_transaction_session_timeout TO '5min'")
            try refuseNUL(rows, of: table, columns: columns)
        }
        let overriding = keepingIDs && db.dialect == .postgres ? " OVERRIDING SYSTEM VALUE" : ""
        let head = "INSERT INTO \(table) (\(columns.joined(separator: ", ")))\(overriding) VALUES "
        let tuple = "(" + Array(repeating: "?", count: columns.count).joined(separator: ", ") + ")"
        let perStatement = max(1, maximumValues / columns.count)
        var start = 0
        while start < rows.count {
            // Up to `perStatement` rows, and fewer when they are large: a statement of rows
            // holding megabyte payloads stays a few megabytes.
            var end = start
            var bytes = 0
            while end < rows.count, end - start < perStatement, end == start || bytes < maximumStatementBytes {
                bytes += size(of: rows[end])
                end += 1
            }
            let chunk = rows[start..<end]
            let sql =
                head + Array(repeating: tuple, count: chunk.count).joined(separator: ", ") + " ON CONFLICT DO NOTHING"
            try db.execute(sql: sql, arguments: SQLArguments(chunk.flatMap { $0 }))
            start = end
        }
    }

    /// A page of an id-keyed table's rows (its SQL name) after id `after`, in id order.
    static func page(
        _ db: some SQLTransaction, of table: String, columns: [String], after: Int64, limit: Int
    ) throws -> [[SQLValue]] {
        try db.fetchRows(
            sql: "SELECT \(selected(columns, db.dialect)) FROM \(table) WHERE id > ? ORDER BY id LIMIT ?",
            arguments: [after, limit]
        ).map(\.values)
    }

    /// The select list of `columns`. On SQLite a text is read as its bytes: read as text, it
    /// would end at a NUL, which rows written before jobq refused NULs may hold, and the copy
    /// and its check would both lose the rest alike and call the tables the same.
    private static func selected(_ columns: [String], _ d: SQLDialect) -> String {
        switch d {
        case .sqlite:
            columns.map { "CASE WHEN typeof(\($0)) = 'text' THEN CAST(\($0) AS BLOB) ELSE \($0) END AS \($0)" }
                .joined(separator: ", ")
        case .postgres: columns.joined(separator: ", ")
        }
    }

    /// Refuses rows holding a NUL in a text, which PostgreSQL's text cannot hold, naming the
    /// first (nothing of the page is written).
    private static func refuseNUL(_ rows: [[SQLValue]], of table: String, columns: [String]) throws {
        for row in rows {
            for (index, value) in row.enumerated() {
                guard case .text(let text) = value, holdsNUL(text) else { continue }
                let id = self.id(of: row, columns: columns).map { "row \($0)" } ?? "a row"
                throw JobQueueError.invalidInput(
                    "\(id) of \(table) holds a NUL (U+0000) in its \(columns[index]), which PostgreSQL's text cannot "
                        + "hold (it was stored before jobq refused NULs): change or delete it on the source, then run the "
                        + "same copy again (it goes on from where it stopped)")
            }
        }
    }

    /// Whether `text` holds a NUL: `memchr` over its bytes, which for a page of megabyte payloads
    /// is a few milliseconds where a byte-by-byte walk took seconds in a debug build.
    private static func holdsNUL(_ text: String) -> Bool {
        var text = text
        return text.withUTF8 { bytes in
            guard let start = bytes.baseAddress else { return false }
            return memchr(start, 0, bytes.count) != nil
        }
    }

    /// The id of a row of ``page(_:of:columns:after:limit:)``.
    static func id(of row: [SQLValue], columns: [String]) -> Int64? {
        columns.firstIndex(of: "id").flatMap { Int64.from(row[$0]) }
    }

    /// Every row of a table copied whole: all but the copy's own (``CopyPlan/Table/copiedRows``).
    static func all(_ db: some SQLTransaction, of table: CopyPlan.Table, columns: [String]) throws -> [[SQLValue]] {
        let condition = table.copiedRows.map { " WHERE \($0)" } ?? ""
        return try db.fetchRows(sql: "SELECT \(selected(columns, db.dialect)) FROM \(table.sqlName)\(condition)")
            .map(\.values)
    }

    /// Bytes of values per INSERT, roughly at most.
    static let maximumStatementBytes = 8 << 20

    /// A row's size, roughly: its texts' bytes and 8 for any other value.
    static func size(of row: [SQLValue]) -> Int {
        row.reduce(0) { total, value in
            if case .text(let text) = value { return total + text.utf8.count }
            return total + 8
        }
    }
}

/// A checksum of rows: a 128-bit hash of each row's values, combined either in order (the event
/// feed) or as a set (a table, whose rows the two stores may return in different orders).
package struct CopyChecksum: Sendable {
    private var first: UInt64 = 0
    private var second: UInt64 = 0
    private let ordered: Bool
    /// Rows added.
    package private(set) var rows = 0

    package init(ordered: Bool) { self.ordered = ordered }

    package mutating func add(_ values: some Sequence<SQLValue>) {
        var a: UInt64 = 0xcbf2_9ce4_8422_2325
        var b: UInt64 = 0x8422_2325_cbf2_9ce4
        @inline(__always) func feed(_ byte: UInt8) {
            a = (a ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
            b = (b ^ UInt64(byte)) &* 0x9e37_79b9_7f4a_7c15
        }
        @inline(__always) func feed(_ word: UInt64) {
            for shift in stride(from: 0, to: 64, by: 8) { feed(UInt8(truncatingIfNeeded: word >> UInt64(shift))) }
        }
        for value in values {
            switch value {
            case .null: feed(UInt8(0))
            case .integer(let number):
                feed(UInt8(1))
                feed(UInt64(bitPattern: number))
            case .real(let number):
                feed(UInt8(2))
                feed(number.bitPattern)
            case .text(let text):
                feed(UInt8(3))
                for byte in text.utf8 { feed(byte) }
                // Never a byte of UTF-8: where one text ends.
                feed(UInt8(0xFF))
            }
        }
        let row = (Self.mixed(a), Self.mixed(b))
        if ordered {
            first = Self.mixed(first ^ row.0) &+ row.0
            second = Self.mixed(second ^ row.1) &+ row.1
        } else {
            first = first &+ row.0
            second = second &+ row.1
        }
        rows += 1
    }

    /// The checksum as 32 hexadecimal digits.
    package var hex: String {
        func digits(_ word: UInt64) -> String {
            let text = String(word, radix: 16)
            return String(repeating: "0", count: 16 - text.count) + text
        }
        return digits(first) + digits(second)
    }

    /// splitmix64's finalizer: every bit of the input moves every bit of the output.
    private static func mixed(_ value: UInt64) -> UInt64 {
        var z = value &+ 0x9e37_79b9_7f4a_7c15
        z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
        z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
        return z ^ (z >> 31)
    }
}

/// How many rows a copy reads at once: the rows per transaction asked for, fewer while rows are
/// large (a page of two thousand rows with megabyte payloads would be gigabytes in memory).
struct CopyPageSize {
    let most: Int
    private(set) var current: Int
    /// The bytes a page should hold at most.
    static let targetBytes = 32 << 20

    init(most: Int) {
        self.most = most
        current = most
    }

    /// After reading a page of `bytes` in `rows`: the next page's size.
    mutating func read(rows: Int, bytes: Int) {
        guard rows > 0 else { return }
        let perRow = max(1, bytes / rows)
        current = max(1, min(most, Self.targetBytes / perRow))
    }
}
