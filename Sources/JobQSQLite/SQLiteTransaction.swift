import Foundation
import GRDB
import JobQCore
import JobQSQL

/// A GRDB `Database` inside one of ``SQLiteStore``'s transactions, as a ``SQLTransaction``.
struct SQLiteTransaction: SQLTransaction {
    let db: Database
    let outbox = EventOutbox()

    var dialect: SQLDialect { .sqlite }

    func statement(sql: String) throws -> RawStatement { try RawStatement(db, sql: sql) }

    func execute(sql: String, arguments: SQLArguments) throws {
        try db.execute(sql: sql, arguments: Self.arguments(arguments))
    }

    /// From the connection's statement cache: compiling a statement (GRDB's authorizer
    /// included) cost a bulk action three quarters of its time when every job's reads compiled
    /// theirs anew. The texts are jobq's own, a bounded set; a filter's go through ``fetchRowsOnce(sql:arguments:)``.
    func fetchRows(sql: String, arguments: SQLArguments) throws -> [SQLRow] {
        Self.rows(try Row.fetchAll(try db.cachedStatement(sql: sql), arguments: Self.arguments(arguments)))
    }

    func fetchRowsOnce(sql: String, arguments: SQLArguments) throws -> [SQLRow] {
        Self.rows(try Row.fetchAll(db, sql: sql, arguments: Self.arguments(arguments)))
    }

    private static func rows(_ rows: [Row]) -> [SQLRow] {
        guard let first = rows.first else { return [] }
        let names = Array(first.columnNames)
        return rows.map { row in SQLRow(names: names, values: row.databaseValues.map(Self.value)) }
    }

    var changesCount: Int { db.changesCount }

    var lastInsertedRowID: Int64? { db.lastInsertedRowID }

    private static func arguments(_ arguments: SQLArguments) -> StatementArguments {
        StatementArguments(
            arguments.values.map { value -> DatabaseValue in
                switch value {
                case .null: .null
                case .integer(let value): value.databaseValue
                case .real(let value): value.databaseValue
                // GRDB binds a string up to its first NUL; a text holding one (a row a copy moves,
                // written before jobq refused NULs) goes whole as its bytes, which read back as
                // the same text.
                case .text(let value): value.utf8.contains(0) ? Data(value.utf8).databaseValue : value.databaseValue
                }
            })
    }

    private static func value(_ value: DatabaseValue) -> SQLValue {
        switch value.storage {
        case .null: .null
        case .int64(let value): .integer(value)
        case .double(let value): .real(value)
        case .string(let value): .text(value)
        case .blob(let data): .text(String(decoding: data, as: UTF8.self))
        }
    }
}

extension RawStatement: SQLStatement {}
