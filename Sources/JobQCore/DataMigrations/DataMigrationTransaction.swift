import Foundation

/// The jobq store's own transaction, handed to a data migration step by
/// ``DataMigrationContext/write(_:)``: what you change here commits together with the record of
/// the step, on SQLite and on PostgreSQL alike.
///
/// Statements take `?` placeholders on both stores (jobq numbers them for PostgreSQL). Where the
/// two dialects differ, look at ``store``.
///
/// ```swift
/// try await context.write { db in
///     try db.execute("UPDATE notes SET title = trim(title) WHERE id > ?", [1000])
///     let rows = try db.rows("SELECT id, title FROM notes WHERE title = ?", [""])
///     print(rows.count, rows.first?["title"]?.string ?? "")
/// }
/// ```
public struct DataMigrationTransaction {
    /// Which store the transaction belongs to.
    public enum StoreKind: Sendable, Hashable {
        case sqlite
        case postgresql
    }

    /// The store's transaction (the SQLite store reaches GRDB's `Database` through it).
    package let transaction: any DataMigrationStatements

    package init(_ transaction: any DataMigrationStatements) {
        self.transaction = transaction
    }

    /// The store this transaction runs on.
    public var store: StoreKind { transaction.storeKind }

    /// Runs a statement that returns no rows. Returns how many rows an INSERT, UPDATE or DELETE
    /// changed (0 for other statements).
    @discardableResult
    public func execute(_ sql: String, _ arguments: [DataMigrationValue] = []) throws -> Int {
        try transaction.execute(sql, arguments)
    }

    /// Runs a query and returns its rows.
    public func rows(_ sql: String, _ arguments: [DataMigrationValue] = []) throws -> [DataMigrationRow] {
        try transaction.rows(sql, arguments)
    }
}

/// What a data migration step's transaction needs of a store's own transaction: each store's
/// transaction type provides it.
package protocol DataMigrationStatements {
    var storeKind: DataMigrationTransaction.StoreKind { get }
    /// Runs a statement with `?` placeholders; returns the rows it changed.
    func execute(_ sql: String, _ arguments: [DataMigrationValue]) throws -> Int
    func rows(_ sql: String, _ arguments: [DataMigrationValue]) throws -> [DataMigrationRow]
}

/// A value bound to a ``DataMigrationTransaction`` statement or read from one of its rows.
///
/// ```swift
/// try db.execute("INSERT INTO tags (name, uses) VALUES (?, ?)", ["swift", 3])
/// ```
public enum DataMigrationValue: Sendable, Hashable, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral,
    ExpressibleByStringLiteral, ExpressibleByBooleanLiteral, ExpressibleByNilLiteral
{
    case null
    case integer(Int64)
    case real(Double)
    case text(String)

    public init(integerLiteral value: Int64) { self = .integer(value) }
    public init(floatLiteral value: Double) { self = .real(value) }
    public init(stringLiteral value: String) { self = .text(value) }
    public init(booleanLiteral value: Bool) { self = .integer(value ? 1 : 0) }
    public init(nilLiteral: ()) { self = .null }

    /// The value as an integer, or nil when it is NULL or not a whole number.
    public var integer: Int64? { Int64.from(sqlValue) }
    /// The value as a floating-point number, or nil when it is NULL or not a number.
    public var real: Double? { Double.from(sqlValue) }
    /// The value as text (numbers as they print), or nil when it is NULL.
    public var string: String? { String.from(sqlValue) }
    public var isNull: Bool { self == .null }

    package var sqlValue: SQLValue {
        switch self {
        case .null: .null
        case .integer(let value): .integer(value)
        case .real(let value): .real(value)
        case .text(let value): .text(value)
        }
    }

    package init(_ value: SQLValue) {
        switch value {
        case .null: self = .null
        case .integer(let value): self = .integer(value)
        case .real(let value): self = .real(value)
        case .text(let value): self = .text(value)
        }
    }
}

/// One row of ``DataMigrationTransaction/rows(_:_:)``: its columns by name, in order.
public struct DataMigrationRow: Sendable, Hashable {
    /// The column names, in the query's order.
    public let columns: [String]
    /// The values, in the same order.
    public let values: [DataMigrationValue]

    package init(columns: [String], values: [SQLValue]) {
        self.columns = columns
        self.values = values.map(DataMigrationValue.init)
    }

    /// The value of the named column, or nil when the query has no such column.
    public subscript(_ column: String) -> DataMigrationValue? {
        columns.firstIndex(of: column).map { values[$0] }
    }
}
