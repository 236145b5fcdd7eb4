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
            arguments.append(path(pointer, d))
            return d == .sqlite ? "json_type(payload, ?) IS NOT NULL" : "(payload #> CAST(? AS text[])) IS NOT NULL"
        case .payloadEquals(let pointer, let value):
            return payload(pointer, .equal, value, d, &arguments)
        case .payloadCompare(let pointer, let order, let value):
            return payload(pointer, order, value, d, &arguments)
        }
    }

    /// A payload member compared as JSON: a type test first, so that the string "7" never
    /// equals the number 7 and a missing member matches nothing.
    private static func payload(
        _ pointer: PayloadPointer, _ order: F.Order, _ value: F.JSONScalar, _ d: SQLDialect,
        _ arguments: inout SQLArguments
    ) -> String {
        let path = path(pointer, d)
        let op = order.rawValue
        switch (d, value) {
        case (.sqlite, .null):
            arguments.append(path)
            return "json_type(payload, ?) = 'null'"
        case (.sqlite, .bool(let flag)):
            arguments.append(path)
            return "json_type(payload, ?) = '\(flag ? "true" : "false")'"
        case (.sqlite, .string(let text)):
            arguments += [path, path, text]
            return "json_type(payload, ?) = 'text' AND json_extract(payload, ?) \(op) ?"
        case (.sqlite, .number(let text)):
            arguments += [path, path]
            // A whole number binds as an integer, keeping every digit of a 64-bit id.
            if let integer = Int64(text) { arguments.append(integer) } else { arguments.append(Double(text) ?? 0) }
            return "json_type(payload, ?) IN ('integer', 'real') AND json_extract(payload, ?) \(op) ?"
        case (.postgres, .null):
            arguments.append(path)
            return "json_typeof(payload #> CAST(? AS text[])) = 'null'"
        case (.postgres, .bool(let flag)):
            arguments += [path, path]
            return "json_typeof(payload #> CAST(? AS text[])) = 'boolean' AND payload #>> CAST(? AS text[]) = '\(flag)'"
        case (.postgres, .string(let text)):
            arguments += [path, path, text]
            // Byte order, as SQLite compares text: the database's collation may differ.
            return
                "json_typeof(payload #> CAST(? AS text[])) = 'string' AND (payload #>> CAST(? AS text[])) COLLATE \"C\" \(op) ?"
        case (.postgres, .number(let text)):
            arguments += [path, path, text]
            // CASE, not AND: PostgreSQL may evaluate AND's sides in either order, and a member
            // holding a string must never reach the numeric cast.
            return """
                CASE WHEN json_typeof(payload #> CAST(? AS text[])) = 'number' \
                THEN CAST(payload #>> CAST(? AS text[]) AS numeric) \(op) CAST(? AS numeric) ELSE FALSE END
                """
        }
    }

    private static func path(_ pointer: PayloadPointer, _ d: SQLDialect) -> String {
        d == .sqlite ? pointer.sqlitePath : pointer.postgresPath
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
