import Foundation

/// A value bound to a statement or read from a result column, in SQLite's four storage classes.
/// Both stores speak it: SQLite natively, PostgreSQL by sending each bound value as text for the
/// server to type by its column (so `1` binds to an integer flag, a JSON text to a `json` column).
package enum SQLValue: Sendable, Equatable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)

    /// The value as text, the way PostgreSQL reads a parameter of a type it infers.
    package var text: String? {
        switch self {
        case .null: nil
        case .integer(let value): String(value)
        // Swift's shortest form that reads back to the same Double.
        case .real(let value):
            value.isFinite ? "\(value)" : (value.isNaN ? "NaN" : (value > 0 ? "Infinity" : "-Infinity"))
        case .text(let value): value
        }
    }
}

/// What can be bound to a statement parameter.
package protocol SQLBindable {
    var sqlValue: SQLValue { get }
}

extension Int64: SQLBindable { package var sqlValue: SQLValue { .integer(self) } }
extension Int: SQLBindable { package var sqlValue: SQLValue { .integer(Int64(self)) } }
extension Int32: SQLBindable { package var sqlValue: SQLValue { .integer(Int64(self)) } }
extension Double: SQLBindable { package var sqlValue: SQLValue { .real(self) } }
extension String: SQLBindable { package var sqlValue: SQLValue { .text(self) } }
extension Bool: SQLBindable { package var sqlValue: SQLValue { .integer(self ? 1 : 0) } }
extension Optional: SQLBindable where Wrapped: SQLBindable {
    package var sqlValue: SQLValue { self?.sqlValue ?? .null }
}

/// What a result column can be read as.
package protocol SQLColumnValue {
    /// nil when the column's value cannot be read as this type (NULL for a non-optional).
    static func from(_ value: SQLValue) -> Self?
}

extension Int64: SQLColumnValue {
    package static func from(_ value: SQLValue) -> Int64? {
        switch value {
        case .integer(let value): value
        case .real(let value): Int64(exactly: value.rounded(.towardZero))
        case .text(let value): Int64(value)
        case .null: nil
        }
    }
}

extension Int: SQLColumnValue {
    package static func from(_ value: SQLValue) -> Int? { Int64.from(value).map(Int.init) }
}

extension Double: SQLColumnValue {
    package static func from(_ value: SQLValue) -> Double? {
        switch value {
        case .integer(let value): Double(value)
        case .real(let value): value
        case .text(let value): Double(value)
        case .null: nil
        }
    }
}

extension String: SQLColumnValue {
    package static func from(_ value: SQLValue) -> String? {
        if case .null = value { return nil }
        return value.text
    }
}

extension Bool: SQLColumnValue {
    package static func from(_ value: SQLValue) -> Bool? { Int64.from(value).map { $0 != 0 } }
}

/// A column that may be NULL reads as nil; one of the wrong type too (as GRDB's optionals do).
extension Optional: SQLColumnValue where Wrapped: SQLColumnValue {
    package static func from(_ value: SQLValue) -> Wrapped?? { .some(Wrapped.from(value)) }
}

/// The parameters of a statement, written as an array literal: `[id, name, now]`.
package struct SQLArguments: ExpressibleByArrayLiteral, Sendable {
    package var values: [SQLValue]

    package init(_ values: [SQLValue] = []) { self.values = values }

    package init(arrayLiteral elements: (any SQLBindable)?...) {
        values = elements.map { $0?.sqlValue ?? .null }
    }

    package mutating func append(_ value: (any SQLBindable)?) { values.append(value?.sqlValue ?? .null) }

    package static func + (lhs: SQLArguments, rhs: SQLArguments) -> SQLArguments {
        SQLArguments(lhs.values + rhs.values)
    }
    package static func += (lhs: inout SQLArguments, rhs: SQLArguments) { lhs.values += rhs.values }
}
