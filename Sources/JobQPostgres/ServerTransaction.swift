import Foundation
import JobQCore
import JobQSQL
import Synchronization

/// A ``PostgresSession`` as a ``SQLTransaction``: jobq's SQL, written with SQLite's `?` and
/// `?NNN` parameters, is sent with the server's `$N` ones.
struct ServerTransaction: SQLTransaction {
    let session: PostgresSession
    let dialect: SQLDialect
    /// Rows the last statement changed (a class: statements report into it).
    private let changes = ChangeCount()
    let outbox = EventOutbox()

    init(session: PostgresSession, dialect: SQLDialect) {
        self.session = session
        self.dialect = dialect
    }

    func statement(sql: String) throws -> ServerStatement {
        ServerStatement(sql: ParameterStyle.dollar(sql), transaction: self)
    }

    func execute(sql: String, arguments: SQLArguments) throws {
        _ = try run(ParameterStyle.dollar(sql), arguments.values)
    }

    func fetchRows(sql: String, arguments: SQLArguments) throws -> [SQLRow] {
        let result = try run(ParameterStyle.dollar(sql), arguments.values)
        return result.rows.map { SQLRow(names: result.names, values: $0) }
    }

    var changesCount: Int { changes.value }

    /// Runs a translated statement with the values bound at SQLite's parameter numbers.
    fileprivate func run(_ statement: ParameterStyle.Translated, _ values: [SQLValue]) throws -> StatementResult {
        let sent = statement.parameters.map { $0 <= values.count ? values[$0 - 1] : .null }
        let result = try session.run(statement.sql, sent)
        changes.value = result.changes
        return result
    }
}

private final class ChangeCount {
    var value = 0
}

/// A statement of a ``ServerTransaction``: parameters are gathered until the first step, which
/// runs it and keeps its rows to step through.
final class ServerStatement: SQLStatement {
    private let sql: ParameterStyle.Translated
    private let transaction: ServerTransaction
    private var values: [SQLValue] = []
    private var result: StatementResult?
    private var row = -1

    fileprivate init(sql: ParameterStyle.Translated, transaction: ServerTransaction) {
        self.sql = sql
        self.transaction = transaction
    }

    private func set(_ index: Int32, _ value: SQLValue) {
        let position = Int(index) - 1
        if values.count <= position { values += Array(repeating: .null, count: position + 1 - values.count) }
        values[position] = value
    }

    func bind(_ index: Int32, _ value: Int64) { set(index, .integer(value)) }
    func bind(_ index: Int32, _ value: Int) { set(index, .integer(Int64(value))) }
    func bind(_ index: Int32, _ value: Double) { set(index, .real(value)) }
    func bind(_ index: Int32, _ value: Double?) { set(index, value.map(SQLValue.real) ?? .null) }
    func bind(_ index: Int32, _ value: Int64?) { set(index, value.map(SQLValue.integer) ?? .null) }
    func bind(_ index: Int32, _ value: String?) { set(index, value.map(SQLValue.text) ?? .null) }

    func step() throws -> Bool {
        if result == nil {
            result = try transaction.run(sql, values)
            row = -1
        }
        row += 1
        return row < result!.rows.count
    }

    func run() throws {
        _ = try transaction.run(sql, values)
        reset()
    }

    func reset() {
        result = nil
        row = -1
    }

    private var current: [SQLValue] { result!.rows[row] }
    func isNull(_ column: Int32) -> Bool { current[Int(column)] == .null }
    func int64(_ column: Int32) -> Int64 { Int64.from(current[Int(column)]) ?? 0 }
    func double(_ column: Int32) -> Double { Double.from(current[Int(column)]) ?? 0 }
    func optionalDouble(_ column: Int32) -> Double? { Double.from(current[Int(column)]) }
    func optionalString(_ column: Int32) -> String? { String.from(current[Int(column)]) }
    func optionalInt64(_ column: Int32) -> Int64? { Int64.from(current[Int(column)]) }
}

/// SQLite's parameters (`?` numbered by position, `?NNN` by number) as PostgreSQL's `$N`,
/// numbered again from 1 in order of first use: PostgreSQL cannot type a parameter a statement
/// never uses (jobq's fenced updates number theirs from 20). Quoted text and identifiers are
/// left alone. Translations are kept: a store sends the same few hundred statements again and
/// again.
enum ParameterStyle {
    struct Translated: Sendable {
        let sql: String
        /// For each `$N` in order, the SQLite parameter number whose value it takes.
        let parameters: [Int]
    }

    private static let cache = Mutex<[String: Translated]>([:])

    static func dollar(_ sql: String) -> Translated {
        if let done = cache.withLock({ $0[sql] }) { return done }
        let translated = translate(sql)
        cache.withLock { cache in
            // Statements built from user-chosen filters are few in kind; the bound keeps a
            // pathological caller from growing it without end.
            if cache.count > 4_096 { cache.removeAll() }
            cache[sql] = translated
        }
        return translated
    }

    static func translate(_ sql: String) -> Translated {
        var output = ""
        output.reserveCapacity(sql.utf8.count + 16)
        var highest = 0
        var parameters: [Int] = []
        var quote: Character?
        var characters = sql.makeIterator()
        var pending: Character? = nil
        func next() -> Character? {
            if let waiting = pending {
                pending = nil
                return waiting
            }
            return characters.next()
        }
        while let character = next() {
            if let open = quote {
                output.append(character)
                if character == open { quote = nil }
                continue
            }
            switch character {
            case "'", "\"":
                quote = character
                output.append(character)
            case "?":
                var digits = ""
                while let following = next() {
                    if following.isASCII, following.isNumber {
                        digits.append(following)
                    } else {
                        pending = following
                        break
                    }
                }
                let number = Int(digits) ?? (highest + 1)
                highest = max(highest, number)
                if let index = parameters.firstIndex(of: number) {
                    output += "$\(index + 1)"
                } else {
                    parameters.append(number)
                    output += "$\(parameters.count)"
                }
            default:
                output.append(character)
            }
        }
        return Translated(sql: output, parameters: parameters)
    }
}
