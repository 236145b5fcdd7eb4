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
