import JobQCore
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
    static var sql: String { Text.sql }

    let bindings: PostgresBindings

    func makeBindings() throws -> PostgresBindings { bindings }

    func decodeRow(_ row: PostgresRow) throws -> PostgresRow { row }
}
