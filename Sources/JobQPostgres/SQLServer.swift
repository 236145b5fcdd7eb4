import Foundation
import JobQCore

/// A database server that holds a jobq store (PostgreSQL, in `JobQPostgres`): the sessions its
/// transactions run on, and what it offers besides SQL. ``JobQueue/init(server:)`` wraps one in
/// the store that runs jobq's SQL on it, so a server store needs no state-change code of its own.
package protocol SQLServer: Sendable {
    var dialect: SQLDialect { get }
    /// Where the server is, and the schema that holds the store's tables.
    var settings: PostgresSettings { get }
    /// Runs `body` in a write transaction, off Swift concurrency's threads (`body` blocks on
    /// the network). An exclusive write runs alone among every process's writes on the server,
    /// shared ones beside each other (``WriteLock``); each one's commit is reported to the
    /// others' ``otherCommitsWatch(for:)`` of `audience`.
    func write<T: Sendable>(
        audience: CommitAudience, lock: WriteLock, _ body: @escaping @Sendable (any SQLServerSession) throws -> T
    ) async throws -> T
    /// Runs one of the hot path's fixed statements outside a transaction, so that it commits on
    /// its own: a change that one statement makes whole takes one round trip. Prepared once per
    /// connection where the server allows. Statements of one `line` go one after the other;
    /// lines overlap.
    func autocommit<Text: StatementText>(_ text: Text.Type, _ values: [SQLValue], line: AutocommitLine)
        async throws -> SQLServerResult
    /// Runs `body` in a read-only transaction on one snapshot.
    func read<T: Sendable>(_ body: @escaping @Sendable (any SQLServerSession) throws -> T) async throws -> T
    /// The schema version, read in a transaction.
    func schemaVersion(_ session: any SQLServerSession) throws -> Int
    /// What reports other processes' commits that matter to `interest`.
    func otherCommitsWatch(for interest: CommitInterest) -> (any OtherCommitsWatch)?
}

/// A connection inside one of a ``SQLServer``'s transactions.
package protocol SQLServerSession: AnyObject {
    /// Runs one statement with `$1`-style parameters, each sent as text for the server to type
    /// by where it stands, and returns all its rows. Blocks the calling thread.
    func run(_ sql: String, _ values: [SQLValue]) throws -> SQLServerResult
}

/// What a statement returned: its rows, and how many rows it changed.
package struct SQLServerResult: Sendable {
    package var names: [String]
    package var rows: [[SQLValue]]
    package var changes: Int

    package init(names: [String], rows: [[SQLValue]], changes: Int) {
        self.names = names
        self.rows = rows
        self.changes = changes
    }
}

/// Which of a server's connections for statements that commit on their own runs a statement:
/// a worker's claims never wait behind a burst of its process's enqueues, nor behind its
/// completions.
package enum AutocommitLine: Sendable {
    case enqueues
    case claims
    case completions
}
