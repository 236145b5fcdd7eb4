import Foundation
import JobQCore
import Logging
import PostgresNIO
import Synchronization

/// A jobq store on PostgreSQL, as the ``SQLServer`` that jobq's shared SQL runs on.
///
/// Write transactions take one transaction-level advisory lock first, so that they run one at a
/// time across every process and machine: what a transaction reads stays true until it commits
/// (the shared SQL was written for SQLite's single writer), and event ids, handed out under the
/// lock, follow commit order (a follower that resumes after the last id it saw misses nothing).
/// Each write transaction also notifies, delivered at its commit, the channels of those it
/// concerns (``PostgresCommitWatch/channel(for:)``): idle workers on other machines when it may
/// have made work claimable, event followers when it wrote events.
///
/// Each connection has a serial queue of its own whose thread blocks on the network: jobq's SQL
/// is synchronous, and Swift concurrency's few threads must never block.
final class PostgresServer: SQLServer {
    let settings: PostgresSettings
    private let logger: Logger
    private let writer: SessionSlot
    private let readers: [SessionSlot]
    private let nextReader = Atomic<Int>(0)

    /// The key of the advisory lock every write transaction holds: "jobe" in ASCII.
    static let writeLockKey: Int64 = 0x6A6F_6265

    init(settings: PostgresSettings, logger: Logger, readers: Int = 2) {
        self.settings = settings
        self.logger = logger
        let connector = PostgresConnector(settings: settings, logger: logger)
        writer = SessionSlot(name: "jobq.postgres.writer", connector: connector)
        self.readers = (0..<max(1, readers)).map {
            SessionSlot(name: "jobq.postgres.reader\($0)", connector: connector)
        }
    }

    var dialect: SQLDialect { .postgres }

    func write<T: Sendable>(
        audience: CommitAudience, _ body: @escaping @Sendable (any SQLServerSession) throws -> T
    ) async throws -> T {
        try await writer.transaction(begin: "BEGIN", prelude: Self.prelude[audience]!, body)
    }

    /// The lock, and the notifications for `audience`, in one round trip.
    private static let prelude: [CommitAudience: String] = {
        func notify(_ interest: CommitInterest) -> String {
            ", pg_notify('\(PostgresCommitWatch.channel(for: interest))', '')"
        }
        let lock = "SELECT pg_advisory_xact_lock(\(writeLockKey))"
        return [
            .workersAndFollowers: lock + notify(.claimableWork) + notify(.events),
            .followers: lock + notify(.events),
            .nobody: lock
        ]
    }()

    func read<T: Sendable>(_ body: @escaping @Sendable (any SQLServerSession) throws -> T) async throws -> T {
        let slot = readers[nextReader.add(1, ordering: .relaxed).oldValue % readers.count]
        return try await slot.transaction(begin: "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", prelude: nil, body)
    }

    func schemaVersion(_ session: any SQLServerSession) throws -> Int {
        let result = try session.run("SELECT COALESCE(MAX(version), 0) FROM schema_migrations", [])
        return result.rows.first.flatMap { $0.first }.flatMap(Int.from) ?? 0
    }

    func otherCommitsWatch(for interest: CommitInterest) -> (any OtherCommitsWatch)? {
        PostgresCommitWatch(settings: settings, logger: logger, channel: PostgresCommitWatch.channel(for: interest))
    }

    func close() {
        writer.close()
        for reader in readers { reader.close() }
    }

    deinit { close() }
}

/// A connection and the serial queue it is used on; connected on first use and again after it
/// was lost.
private final class SessionSlot: @unchecked Sendable {
    // Unchecked: `session` is only touched on `queue`.
    private let queue: DispatchQueue
    private let connector: PostgresConnector
    private var session: PostgresSession?
    /// Whether a session was dropped after a failure (the next connect says so in the log).
    private var lostEarlier = false
    private let name: String

    init(name: String, connector: PostgresConnector) {
        queue = DispatchQueue(label: name)
        self.name = name
        self.connector = connector
    }

    func transaction<T: Sendable>(
        begin: String, prelude: String?, _ body: @escaping @Sendable (any SQLServerSession) throws -> T
    ) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            queue.async {
                continuation.resume(with: Result { try self.runTransaction(begin: begin, prelude: prelude, body) })
            }
        }
    }

    private func runTransaction<T>(begin: String, prelude: String?, _ body: (any SQLServerSession) throws -> T) throws
        -> T
    {
        var session = try connected()
        do {
            do {
                _ = try session.run(begin, [])
            } catch {
                // The server ended the connection while it sat idle (a restart, a pooler, an
                // administrator): nothing of this transaction was sent, so it starts again on a
                // new one.
                guard session.isClosed else { throw error }
                self.session = nil
                lostEarlier = true
                session = try connected()
                _ = try session.run(begin, [])
            }
            if let prelude { _ = try session.run(prelude, []) }
            let result = try body(session)
            _ = try session.run("COMMIT", [])
            return result
        } catch {
            if session.isClosed {
                self.session = nil
                lostEarlier = true
            } else if (try? session.run("ROLLBACK", [])) == nil {
                try? session.connection.close().wait()
                self.session = nil
                lostEarlier = true
            }
            throw error
        }
    }

    private func connected() throws -> PostgresSession {
        if let session, !session.isClosed { return session }
        if session != nil || lostEarlier {
            // Ended by the server (idle_in_transaction_session_timeout, a restart), by the
            // network, or given up by the client's deadline.
            connector.logger.warning(
                "the PostgreSQL connection \(name) was lost; opening a new one to \(connector.settings)")
        }
        let session = PostgresSession(
            connection: try connector.connectBlocking(), logger: connector.logger,
            deadline: connector.settings.timeouts.clientDeadline)
        self.session = session
        lostEarlier = false
        return session
    }

    /// Closes the connection once the transactions queued before have run.
    func close() {
        queue.async {
            try? self.session?.connection.close().wait()
            self.session = nil
        }
    }
}
