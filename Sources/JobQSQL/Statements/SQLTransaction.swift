import Foundation
import JobQCore

/// The SQL a store's transaction runs, the same for SQLite and for a database server, so that
/// every state change and all its consequences are written once (the `SQLStore` extensions).
///
/// Statements are written in SQLite's dialect with `?` and `?NNN` parameters; where the
/// dialects part (JSON functions, lists of ids), ``dialect`` gives the fragment. A transaction
/// value is only valid inside the store's `read` or `write` closure that received it.
///
/// ```swift
/// let statement = try db.statement(sql: "UPDATE jobs SET state = 'ready' WHERE id = \(Ready.job)")
/// statement.bind(Ready.job, job)
/// try statement.run()
/// ```
///
/// A statement with more than a parameter or two names them (``SQLParameter``).
package protocol SQLTransaction: DataMigrationStatements {
    associatedtype Statement: SQLStatement

    var dialect: SQLDialect { get }
    /// A statement to bind and step; on SQLite it comes from the connection's statement cache,
    /// so the hot path prepares each of its statements once.
    func statement(sql: String) throws -> Statement
    func execute(sql: String, arguments: SQLArguments) throws
    /// On SQLite from the connection's statement cache, as ``statement(sql:)``.
    func fetchRows(sql: String, arguments: SQLArguments) throws -> [SQLRow]
    /// ``fetchRows(sql:arguments:)`` for a text made from outside input (a ``JobFilter``): its
    /// statement is not kept, so that many different searches cannot grow the cache.
    func fetchRowsOnce(sql: String, arguments: SQLArguments) throws -> [SQLRow]
    /// Rows the last INSERT, UPDATE or DELETE changed.
    var changesCount: Int { get }
    /// The id of the row the last INSERT wrote, where the store keeps it for the connection
    /// (SQLite); nil elsewhere, where the INSERT returns it.
    var lastInsertedRowID: Int64? { get }
    /// The events this transaction has appended and not yet written: one per transaction value.
    var outbox: EventOutbox { get }
}

extension SQLTransaction {
    package var lastInsertedRowID: Int64? { nil }

    /// Where statements are not cached anyway: as ``fetchRows(sql:arguments:)``.
    package func fetchRowsOnce(sql: String, arguments: SQLArguments) throws -> [SQLRow] {
        try fetchRows(sql: sql, arguments: arguments)
    }

    package func execute(sql: String) throws { try execute(sql: sql, arguments: []) }

    package func fetchRows(sql: String) throws -> [SQLRow] { try fetchRows(sql: sql, arguments: []) }

    package func fetchRow(sql: String, arguments: SQLArguments = []) throws -> SQLRow? {
        try fetchRows(sql: sql, arguments: arguments).first
    }

    /// The first column of the first row; nil without a row or when it is NULL.
    package func fetchOne<T: SQLColumnValue>(_ type: T.Type, sql: String, arguments: SQLArguments = []) throws -> T? {
        guard let row = try fetchRow(sql: sql, arguments: arguments), let value = row.values.first else { return nil }
        return T.from(value)
    }

    /// The first column of every row, skipping NULLs.
    package func fetchAll<T: SQLColumnValue>(_ type: T.Type, sql: String, arguments: SQLArguments = []) throws -> [T] {
        try fetchRows(sql: sql, arguments: arguments).compactMap { $0.values.first.flatMap(T.from) }
    }
}

/// A statement of a ``SQLTransaction``: bind parameters (numbered from 1), step through the
/// rows and read their columns (numbered from 0), reset.
package protocol SQLStatement: ColumnReader {
    func bind(_ index: Int32, _ value: Int64)
    func bind(_ index: Int32, _ value: Int)
    func bind(_ index: Int32, _ value: Double)
    func bind(_ index: Int32, _ value: Double?)
    func bind(_ index: Int32, _ value: Int64?)
    func bind(_ index: Int32, _ value: String?)
    /// Steps once. Returns true when a row is available (read it with the column accessors).
    func step() throws -> Bool
    /// Runs a statement that returns no rows, and resets it.
    func run() throws
    /// Ends a statement whose rows were read, so it releases what it holds.
    func reset()
    func isNull(_ column: Int32) -> Bool
}

extension SQLStatement {
    /// Binds `arguments` to the parameters 1, 2, ... in order.
    func bind(_ arguments: SQLArguments) {
        for (offset, value) in arguments.values.enumerated() {
            let index = Int32(offset + 1)
            switch value {
            case .null: bind(index, nil as String?)
            case .integer(let value): bind(index, value)
            case .real(let value): bind(index, value)
            case .text(let value): bind(index, value)
            }
        }
    }
}

/// One result row, with its columns' names: `row["id"] as JobID`.
package struct SQLRow: Sendable, ColumnReader {
    package let names: [String]
    package let values: [SQLValue]

    package init(names: [String], values: [SQLValue]) {
        self.names = names
        self.values = values
    }

    /// The named column. A query names the columns it reads, so a missing one, or a NULL read
    /// as a non-optional, is a bug in jobq and stops here rather than reading a wrong value.
    package subscript<T: SQLColumnValue>(_ name: String) -> T {
        guard let index = names.firstIndex(of: name) else { preconditionFailure("no column \(name) in \(names)") }
        return self[index]
    }

    package subscript<T: SQLColumnValue>(_ index: Int) -> T {
        guard let value = T.from(values[index]) else {
            preconditionFailure("column \(names[index]) is \(values[index]), not \(T.self)")
        }
        return value
    }

    package func int64(_ column: Int32) -> Int64 { self[Int(column)] }
    package func double(_ column: Int32) -> Double { self[Int(column)] }
    package func optionalDouble(_ column: Int32) -> Double? { self[Int(column)] }
    package func optionalString(_ column: Int32) -> String? { self[Int(column)] }
    package func optionalInt64(_ column: Int32) -> Int64? { self[Int(column)] }
}

/// A statement written once for every dialect, kept in each: `static let count = DialectSQL {
/// "SELECT COUNT(*) FROM jobs WHERE \($0.integer("id", in: "?"))" }`, then `count[db.dialect]`.
package struct DialectSQL: Sendable {
    private let sqlite: String
    private let postgres: String

    package init(_ make: (SQLDialect) -> String) {
        sqlite = make(.sqlite)
        postgres = make(.postgres)
    }

    package subscript(_ dialect: SQLDialect) -> String {
        switch dialect {
        case .sqlite: sqlite
        case .postgres: postgres
        }
    }
}

/// Where SQLite's and PostgreSQL's SQL part, as fragments to paste into a statement.
package enum SQLDialect: Sendable {
    case sqlite
    case postgres

    /// Whether a job's `enqueued` event is read from the job's own row (its `enqueued_data`, at
    /// the job's id in the feed) instead of written as a row of jobq_events: on SQLite, where it
    /// saves two of the five pages a single enqueue writes, and where one writer at a time lets
    /// jobs and events share one id counter (``EventOutbox``). PostgreSQL orders its feed by
    /// writing transaction (``StoreSQL/EventPosition``) and writes the event row.
    package var keepsEnqueuedEventInJobRow: Bool { self == .sqlite }

    /// `column` is one of the integers of a JSON array bound at `parameter`: `WHERE \(...)`.
    package func integer(_ column: String, in parameter: String) -> String {
        switch self {
        case .sqlite: "\(column) IN (SELECT value FROM json_each(\(parameter)))"
        // A JSON array of integers is a PostgreSQL array literal once its brackets are braces.
        // `= ANY (array)`, not `IN (SELECT json_array_elements...)`: the planner sizes an array
        // it can fold and looks each element up by index, where it guessed 100 rows for the
        // subquery and joined it in a nested loop with all of a worker's jobs (a worker's check
        // of the thousand jobs it holds took seconds).
        case .postgres: "\(column) = ANY (CAST(translate(CAST(\(parameter) AS text), '[]', '{}') AS bigint[]))"
        }
    }

    /// The strings of a JSON array bound at `parameter` as a subquery: `queue IN (\(...))`.
    package func texts(in parameter: String) -> String {
        switch self {
        case .sqlite: "SELECT value FROM json_each(\(parameter))"
        case .postgres: "SELECT json_array_elements_text(CAST(\(parameter) AS json))"
        }
    }

    /// A VALUES list of `count` rows of parameters numbered from `first`, row by row, whose
    /// columns a multi-row UPDATE joins as column1, column2, ... in both dialects. PostgreSQL,
    /// which cannot type a VALUES list's parameters, gets each column's `types`.
    package func values(rows count: Int, from first: some SQLParameter, types: [String]) -> String {
        (0..<count).map { row in
            let columns = types.indices.map { column in
                let parameter = "?\(Int(first.rawValue) + types.count * row + column)"
                return switch self {
                case .sqlite: parameter
                case .postgres: "CAST(\(parameter) AS \(types[column]))"
                }
            }
            return "(" + columns.joined(separator: ", ") + ")"
        }.joined(separator: ", ")
    }

    /// A JSON text to bind where the statement has ``json(_:)``: SQLite minifies it itself.
    package func storedJSON(_ text: String) -> String {
        switch self {
        case .sqlite: text
        case .postgres: JSONText.minified(text)
        }
    }

    package func storedJSON(_ text: String?) -> String? { text.map(storedJSON) }

    /// A JSON text bound at `parameter`, checked (and on SQLite minified) as it is stored; bind
    /// ``storedJSON(_:)`` of it, which minifies it where the server does not.
    package func json(_ parameter: String) -> String {
        switch self {
        case .sqlite: "json(\(parameter))"
        case .postgres: "CAST(\(parameter) AS json)"
        }
    }

    /// The text of a top-level member of the JSON object in `column`: `column ->> key`.
    package func jsonText(_ column: String, key: String) -> String {
        switch self {
        case .sqlite: "json_extract(\(column), '$.\(key)')"
        case .postgres: "(\(column) ->> '\(key)')"
        }
    }

    /// Names the index a query must walk, where the dialect lets a query name it (SQLite's
    /// planner otherwise picks a worse one for a few of jobq's queries).
    package func indexedBy(_ index: String) -> String {
        switch self {
        case .sqlite: "INDEXED BY \(index)"
        case .postgres: ""
        }
    }

    /// A claim's row locks: on a server, rows another worker's claim holds are skipped.
    package var skipLocked: String {
        switch self {
        case .sqlite: ""
        case .postgres: "FOR UPDATE SKIP LOCKED"
        }
    }

    /// Locks the rows a SELECT reads until the transaction ends, where writers overlap (on
    /// SQLite the transaction holds the only write lock already).
    package var forUpdate: String {
        switch self {
        case .sqlite: ""
        case .postgres: "FOR UPDATE"
        }
    }
}
