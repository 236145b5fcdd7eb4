import JobQCore
import JobQSQL
import PostgresNIO

/// The text of one of the hot path's fixed statements (a self-contained enqueue, a claim, a worker's
/// successes): run as a prepared statement, named for its type, where the settings allow
/// (``PostgresSettings/preparesStatements``).
package protocol StatementText: Sendable {
    static var sql: String { get }
}

/// A ``StatementText`` as postgres-nio's prepared statement: prepared on a connection the first
/// time it runs there, then only bound and executed.
struct PreparedText<Text: StatementText>: PostgresPreparedStatement {
    typealias Row = PostgresRow

    static var name: String { "jobq." + String(describing: Text.self) }
    /// Bare table names, read through the connection's `search_path`, which is the store's
    /// schema (``PostgresConnector``): postgres-nio takes a prepared statement's text as a
    /// constant of its type, the same for every store.
    static var sql: String { SchemaNames.unqualified(Text.sql) }

    let bindings: PostgresBindings

    func makeBindings() throws -> PostgresBindings { bindings }

    func decodeRow(_ row: PostgresRow) throws -> PostgresRow { row }
}

/// The store whose statements ``CallersPreparedText`` prepares on the application's connection
/// for the task that runs them.
enum CallersStatementStore {
    @TaskLocal static var names: SchemaNames?
}

/// A ``StatementText`` prepared on the application's connection (an enqueue in its
/// transaction), whose `search_path` is the application's: the text names the store's schema,
/// and so does the statement's name (a short hash of the schema), so that two stores on one
/// connection never share a statement. postgres-nio takes a prepared statement's name and text
/// from its type when `execute` is called; both are read from ``CallersStatementStore``, set
/// around that call. Outside it the text is one that fails, never another store's.
struct CallersPreparedText<Text: StatementText>: PostgresPreparedStatement {
    typealias Row = PostgresRow

    static var name: String {
        guard let names = CallersStatementStore.names else { return "jobq.unset." + String(describing: Text.self) }
        return "jobq." + String(describing: Text.self) + "." + schemaTag(names.schema)
    }

    static var sql: String {
        guard let names = CallersStatementStore.names else {
            return "SELECT CAST('jobq prepared a statement without its store' AS integer)"
        }
        return names.qualified(Text.sql)
    }

    let bindings: PostgresBindings

    func makeBindings() throws -> PostgresBindings { bindings }

    func decodeRow(_ row: PostgresRow) throws -> PostgresRow { row }

    /// FNV-1a of the schema's name, in hex: names stay within PostgreSQL's 63 bytes.
    private static func schemaTag(_ schema: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in schema.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        return String(hash, radix: 16)
    }
}
