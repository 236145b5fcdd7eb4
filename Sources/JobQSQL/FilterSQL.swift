import Foundation
import JobQCore

/// A ``JobFilter`` as a condition on jobq_jobs, in either dialect, every value bound: the same
/// jobs match on both stores (a shared table of expressions and expected ids tests that).
package enum FilterSQL {
    private typealias F = JobFilter

    /// The filter's terms joined by AND (`TRUE` for no terms), and the values to bind in order.
    package static func condition(_ filter: JobFilter, _ d: SQLDialect, now: Double) -> (
        sql: String, arguments: SQLArguments
    ) {
        guard !filter.terms.isEmpty else { return ("1 = 1", []) }
        var arguments: SQLArguments = []
        let parts = filter.terms.map { term in
            let sql = condition(term.condition, d, now: now, &arguments)
            // A positive term stays bare, so that an index on its column still serves it;
            // a negated one must not let NULL (no such column value) match nothing either way.
            return term.negated ? "NOT COALESCE((\(sql)), FALSE)" : "(\(sql))"
        }
        return (parts.joined(separator: " AND "), arguments)
    }

    private static func condition(_ c: F.Condition, _ d: SQLDialect, now: Double, _ arguments: inout SQLArguments)
        -> String
    {
        switch c {
        case .textIn(let field, let values):
            for value in values { arguments.append(value) }
            return oneOf(column(field), count: values.count)
        case .textContains(let field, let part):
            arguments.append(part)
            return d == .sqlite ? "instr(\(column(field)), ?) > 0" : "strpos(\(column(field)), ?) > 0"
        case .integerIn(let field, let values):
            for value in values { arguments.append(value) }
            return oneOf(column(field), count: values.count)
        case .integerCompare(let field, let order, let value):
            arguments.append(value)
            return "\(column(field)) \(order.rawValue) ?"
        case .timeCompare(let field, let order, let date):
            arguments.append(date.timeIntervalSince1970)
            return "\(column(field)) \(order.rawValue) ?"
        case .ageCompare(let field, let order, let age):
            // An age below a day is a time after a day ago: the comparison turns around.
            arguments.append(now - age.inSeconds)
            return "\(column(field)) \(reversed(order)) ?"
        case .payloadExists(let pointer):
            return d == .sqlite
                ? "json_type(payload, \(literal(pointer.sqlitePath))) IS NOT NULL"
                : "\(memberJSON(pointer)) IS NOT NULL"
        case .payloadEquals(let pointer, let value):
            return payload(pointer, .equal, value, d, &arguments)
        case .payloadCompare(let pointer, let order, let value):
            return payload(pointer, order, value, d, &arguments)
        }
    }

    /// A payload member compared as JSON: a type test first, so that the string "7" never
    /// equals the number 7 and a missing member matches nothing.
    ///
    /// The member's path is written into the statement (the pointer was checked: no quote,
    /// backslash or control character; a `'` is doubled), not bound: an expression index on the
    /// member (``SQLStore/addPayloadIndex(_:)``) serves only a query that names the same path.
    /// Values are always bound.
    private static func payload(
        _ pointer: PayloadPointer, _ order: F.Order, _ value: F.JSONScalar, _ d: SQLDialect,
        _ arguments: inout SQLArguments
    ) -> String {
        let member = memberText(pointer, d)
        let type =
            d == .sqlite ? "json_type(payload, \(literal(pointer.sqlitePath)))" : "json_typeof(\(memberJSON(pointer)))"
        let op = order.rawValue
        switch (d, value) {
        case (.sqlite, .null): return "\(type) = 'null'"
        case (.sqlite, .bool(let flag)): return "\(type) = '\(flag ? "true" : "false")'"
        case (.sqlite, .string(let text)):
            arguments.append(text)
            return "\(type) = 'text' AND \(member) \(op) ?"
        case (.sqlite, .number(let text)):
            // Exactly, as PostgreSQL's numeric does (beyond 64-bit integers and doubles):
            // `jobq_number_order` compares the member's text as written (SQLite's `->`) with the
            // value's (``JSONNumber``). Before it, json_extract's value (a double beyond 64-bit
            // integers) narrows the candidates around the value's nearest double, so that an index
            // on the member still serves: a number equal to the value rounds to the same double.
            let rounded = Double(text) ?? 0
            let narrowing: String
            switch order {
            case .equal:
                narrowing = "\(member) BETWEEN ? AND ?"
                arguments.append(rounded.nextDown)
                arguments.append(rounded.nextUp)
            case .less, .lessOrEqual:
                narrowing = "\(member) <= ?"
                arguments.append(rounded.nextUp)
            case .greater, .greaterOrEqual:
                narrowing = "\(member) >= ?"
                arguments.append(rounded.nextDown)
            }
            arguments.append(text)
            return "\(type) IN ('integer', 'real') AND \(narrowing) AND "
                + "jobq_number_order(payload -> \(literal(pointer.sqlitePath)), ?) \(op) 0"
        case (.postgres, .null): return "\(type) = 'null'"
        case (.postgres, .bool(let flag)): return "\(type) = 'boolean' AND \(member) = '\(flag)'"
        case (.postgres, .string(let text)):
            arguments.append(text)
            // Equality as the index has it; order by bytes, as SQLite compares text (the
            // database's collation may differ).
            return order == .equal
                ? "\(type) = 'string' AND \(member) = ?" : "\(type) = 'string' AND \(member) COLLATE \"C\" \(op) ?"
        case (.postgres, .number(let text)):
            arguments.append(text)
            // CASE, not AND: PostgreSQL may evaluate AND's sides in either order, and a member
            // holding a string must never reach the numeric cast.
            return
                "CASE WHEN \(type) = 'number' THEN CAST(\(member) AS numeric) \(op) CAST(? AS numeric) ELSE FALSE END"
        }
    }

    /// The member's value as the expression index on it has it: SQLite's `json_extract`, the
    /// text of PostgreSQL's `#>>`.
    package static func memberText(_ pointer: PayloadPointer, _ d: SQLDialect) -> String {
        switch d {
        case .sqlite: "json_extract(payload, \(literal(pointer.sqlitePath)))"
        case .postgres: "(payload #>> \(literal(pointer.postgresPath)))"
        }
    }

    private static func memberJSON(_ pointer: PayloadPointer) -> String {
        "(payload #> \(literal(pointer.postgresPath)))"
    }

    /// An SQL string literal.
    private static func literal(_ text: String) -> String {
        "'" + text.replacingOccurrences(of: "'", with: "''") + "'"
    }

    private static func oneOf(_ column: String, count: Int) -> String {
        count == 1 ? "\(column) = ?" : "\(column) IN (\(Array(repeating: "?", count: count).joined(separator: ", ")))"
    }

    private static func reversed(_ order: F.Order) -> String {
        switch order {
        case .less: ">"
        case .lessOrEqual: ">="
        case .greater: "<"
        case .greaterOrEqual: "<="
        case .equal: "="
        }
    }

    private static func column(_ field: F.TextField) -> String {
        switch field {
        case .state: "state"
        case .queue: "queue"
        case .executor: "executor"
        case .name: "name"
        case .partition: "partition_key"
        case .lane: "lane"
        case .batch: "batch"
        case .unique: "unique_key"
        case .error: "error"
        // Kept after the function is woken: it counts only while the function is parked.
        case .awaiting: "(CASE WHEN state = 'scheduled' THEN awaiting END)"
        }
    }

    private static func column(_ field: F.IntegerField) -> String {
        switch field {
        case .id: "id"
        case .attempt: "attempt"
        case .priority: "priority"
        case .workflow: "workflow_id"
        }
    }

    private static func column(_ field: F.TimeField) -> String {
        switch field {
        case .created: "created_at"
        case .run: "run_at"
        case .started: "started_at"
        case .finished: "finished_at"
        case .expires: "expires_at"
        }
    }
}
