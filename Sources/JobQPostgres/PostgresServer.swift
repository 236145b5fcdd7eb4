import Foundation
import JobQCore
import JobQSQL
import Logging
import PostgresNIO
import Synchronization

/// A jobq store on PostgreSQL: the sessions the store SQL's transactions run on, and the
/// statements of the hot path that commit on their own.
///
/// Every write transaction first takes one transaction-level advisory lock: exclusively when
/// it applies rules (it reads rows and writes what follows from them, as the store SQL was
/// written for SQLite's single writer), shared when it changes only rows it owns (claims with
/// SKIP LOCKED, self-contained enqueues, a worker's fenced successes and renewals: ``WriteLock``). So
/// the hot path of many workers and machines runs side by side, and a rule never sees the
/// world change under it. Event ids are therefore not handed out in commit order: each event
/// carries its transaction's id, and followers read in (transaction, id) order up to the
/// oldest transaction still running (`StoreSQL.events`).
/// Each write transaction also notifies, delivered at its commit, the channels of those it
/// concerns (``PostgresCommitWatch/channel(for:of:)``): idle workers on other machines when it may
/// have made work claimable, event followers when it wrote events.
///
/// The writer connection has a serial queue of its own whose thread blocks on the network:
/// jobq's SQL is synchronous, and Swift concurrency's few threads must never block; so do the
/// readers'. The hot path does not go through them when the connection budget allows
/// (``ConnectionLayout``): self-contained enqueues, claims, and start marks with self-contained
/// successes are one statement each, sent from Swift concurrency on connections of their own
/// (``AutocommitLine``), so that a worker's claims and completions overlap. Transactions (rules,
/// which hold the exclusive lock and so run one at a time anyway) use the writer connection.
final class PostgresServer: Sendable {
    let settings: PostgresSettings
    let logger: Logger
    let layout: ConnectionLayout
    private let writer: SessionSlot
    /// Read transactions' connections; empty when reads go to the writer's.
    private let readers: [SessionSlot]
    /// Statements that commit on their own, sent from Swift concurrency; empty when they go to
    /// the writer's connection.
    private let lines: [DirectSession]
    private let nextReader = Atomic<Int>(0)

    init(settings: PostgresSettings, logger: Logger) {
        self.settings = settings
        self.logger = logger
        layout = ConnectionLayout(budget: settings.connections)
        let connector = PostgresConnector(settings: settings, logger: logger)
        writer = SessionSlot(name: "jobq.postgres.writer", connector: connector)
        readers = (0..<layout.readers).map { SessionSlot(name: "jobq.postgres.reader\($0)", connector: connector) }
        lines = layout.lineNames.map { DirectSession(name: "jobq.postgres.\($0)", connector: connector) }
    }

    var dialect: SQLDialect { .postgres }

    func write<T: Sendable>(
        audience: CommitAudience, lock: WriteLock, _ body: @escaping @Sendable (PostgresSession) throws -> T
    ) async throws -> T {
        try await writer.transaction(begin: "BEGIN", prelude: Self.prelude(audience, lock), body)
    }

    func autocommit<Text: StatementText>(_ text: Text.Type, _ values: [SQLValue], line: AutocommitLine)
        async throws -> StatementResult
    {
        guard let session = session(for: line) else {
            // No connection of their own in this budget: on the writer's, between its transactions.
            return try await writer.statement(Text.sql, values)
        }
        return settings.preparesStatements
            ? try await session.run(text, values) : try await session.run(Text.sql, values)
    }

    /// The connection of `line` in this layout, nil when it has none.
    private func session(for line: AutocommitLine) -> DirectSession? {
        layout.line(for: line).map { lines[$0] }
    }

    /// The lock, and the notifications for `audience`, in one round trip.
    static func prelude(_ audience: CommitAudience, _ lock: WriteLock) -> String {
        lock == .exclusive ? exclusivePrelude[audience]! : sharedPrelude[audience]!
    }

    private static let exclusivePrelude = CommitAudience.allCases.reduce(into: [CommitAudience: String]()) {
        $0[$1] = "SELECT " + lockAndNotify(.exclusive, $1)
    }
    private static let sharedPrelude = CommitAudience.allCases.reduce(into: [CommitAudience: String]()) {
        $0[$1] = "SELECT " + lockAndNotify(.shared, $1)
    }

    /// The select list that takes a write transaction's lock and queues the notifications of its
    /// commit for `audience`: a write's first statement, or part of one.
    static func lockAndNotify(_ lock: WriteLock, _ audience: CommitAudience) -> String {
        // The store's own key and channels, through its functions (``StoreNamespace``): one
        // text for every store.
        func notify(_ interest: CommitInterest, _ payload: String = "") -> String {
            ", pg_notify(\(PostgresCommitWatch.channelFunction(for: interest)), '\(payload)')"
        }
        let take =
            lock == .exclusive
            ? "pg_advisory_xact_lock(jobq_write_lock_key())" : "pg_advisory_xact_lock_shared(jobq_write_lock_key())"
        return switch audience {
        case .workersAndFollowers: take + notify(.claimableWork) + notify(.events)
        case .waitingWorkersAndFollowers:
            take + notify(.claimableWork, PostgresCommitWatch.finishedPayload) + notify(.events)
        case .followers: take + notify(.events)
        case .nobody: take
        }
    }

    func read<T: Sendable>(_ body: @escaping @Sendable (PostgresSession) throws -> T) async throws -> T {
        let slot = readers.isEmpty ? writer : readers[nextReader.add(1, ordering: .relaxed).oldValue % readers.count]
        return try await slot.transaction(begin: "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", prelude: nil, body)
    }

    func schemaVersion(_ session: PostgresSession) throws -> Int {
        let result = try session.run("SELECT COALESCE(MAX(version), 0) FROM jobq_schema_migrations", [])
        return result.rows.first.flatMap { $0.first }.flatMap(Int.from) ?? 0
    }

    func otherCommitsWatch(for interest: CommitInterest) -> (any OtherCommitsWatch)? {
        PostgresCommitWatch(
            settings: settings, logger: logger,
            channel: PostgresCommitWatch.channel(for: interest, of: settings.schemaNames),
            listens: layout.listens)
    }

    func close() {
        for line in lines { line.close() }
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

    /// Runs one statement that commits on its own, between transactions.
    func statement(_ sql: String, _ values: [SQLValue]) async throws -> StatementResult {
        try await withCheckedThrowingContinuation { continuation in
            queue.async {
                continuation.resume(
                    with: Result {
                        let session = try self.connected()
                        do {
                            return try session.run(sql, values)
                        } catch {
                            if session.isClosed { self.drop(after: error) }
                            throw error
                        }
                    })
            }
        }
    }

    /// Runs `body` after `begin` and `prelude`, then commits.
    func transaction<T: Sendable>(
        begin: String, prelude: String?, _ body: @escaping @Sendable (PostgresSession) throws -> T
    ) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            queue.async {
                continuation.resume(with: Result { try self.runTransaction(begin: begin, prelude: prelude, body) })
            }
        }
    }

    private func runTransaction<T>(begin: String, prelude: String?, _ body: (PostgresSession) throws -> T) throws
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
                drop(after: nil)
                session = try connected()
                _ = try session.run(begin, [])
            }
            if let prelude { _ = try session.run(prelude, []) }
            let result = try body(session)
            _ = try session.run("COMMIT", [])
            return result
        } catch {
            if session.isClosed {
                drop(after: error)
            } else if (try? session.run("ROLLBACK", [])) == nil {
                try? session.connection.close().wait()
                drop(after: error)
            }
            throw error
        }
    }

    /// Forgets a lost or abandoned connection (`error` is why; nil when it was found closed
    /// while idle), and says so once per outage; the next transaction opens a new one.
    private func drop(after error: (any Error)?) {
        let opened = session?.opened
        session = nil
        lostEarlier = true
        ServerOutage.noteFailure(
            error, connection: name, opened: opened, logger: connector.logger, settings: connector.settings)
    }

    private func connected() throws -> PostgresSession {
        if let session {
            if !session.isClosed { return session }
            drop(after: nil)
        }
        if lostEarlier {
            // Ended by the server (idle_in_transaction_session_timeout, a restart), by the
            // network, or given up by the client's deadline; said once by the outage.
            connector.logger.debug("opening a new PostgreSQL connection \(name) to \(connector.settings)")
        }
        let session = PostgresSession(
            connection: try connector.connectBlocking(), names: connector.settings.schemaNames,
            logger: connector.logger,
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

/// A connection for statements that commit on their own, used from Swift concurrency without a
/// thread of its own: a blocking session costs two thread hops a statement (to its thread and
/// back), which was most of a self-contained enqueue's time on loopback. Statements may overlap on it;
/// postgres-nio sends them one after the other.
private final class DirectSession: Sendable {
    private let connector: PostgresConnector
    private let name: String
    private let state = Mutex<(session: PostgresSession?, lost: Bool)>((nil, false))

    init(name: String, connector: PostgresConnector) {
        self.name = name
        self.connector = connector
    }

    func run(_ sql: String, _ values: [SQLValue]) async throws -> StatementResult {
        try await run(sql) { session in try await session.runAsync(sql, values) }
    }

    func run<Text: StatementText>(_ text: Text.Type, _ values: [SQLValue]) async throws -> StatementResult {
        try await run(Text.sql) { session in try await session.runPrepared(text, values) }
    }

    private func run(_ sql: String, _ body: (PostgresSession) async throws -> StatementResult) async throws
        -> StatementResult
    {
        let session = try await connected()
        do {
            return try await body(session)
        } catch {
            // A connection that failed (closed by the watchdog, by the server, by the network)
            // is given up at once, even while its close is still under way.
            if !PostgresStoreError.isServerAnswer(error) || ServerOutage.isConnectionLost(error) {
                drop(session, after: error)
                session.close()
            }
            throw PostgresStoreError.from(error, sql: sql)
        }
    }

    private func connected() async throws -> PostgresSession {
        let (current, lost, closed) = state.withLock { state -> (PostgresSession?, Bool, PostgresSession?) in
            var closed: PostgresSession?
            if let session = state.session, session.isClosed {
                state.session = nil
                state.lost = true
                closed = session
            }
            return (state.session, state.lost, closed)
        }
        if let current { return current }
        if let closed {
            ServerOutage.noteFailure(
                nil, connection: name, opened: closed.opened, logger: connector.logger, settings: connector.settings)
        }
        if lost { connector.logger.debug("opening a new PostgreSQL connection \(name) to \(connector.settings)") }
        let session = PostgresSession(
            connection: try await connector.connect(), names: connector.settings.schemaNames,
            logger: connector.logger,
            deadline: connector.settings.timeouts.clientDeadline)
        // Two tasks may connect at once: one connection is kept, the other closed.
        let kept = state.withLock { state -> PostgresSession in
            if let other = state.session, !other.isClosed { return other }
            state.session = session
            state.lost = false
            return session
        }
        if kept !== session { session.close() }
        return kept
    }

    private func drop(_ session: PostgresSession, after error: any Error) {
        let dropped = state.withLock { state in
            guard state.session === session else { return false }
            state.session = nil
            state.lost = true
            return true
        }
        if dropped {
            ServerOutage.noteFailure(
                error, connection: name, opened: session.opened, logger: connector.logger, settings: connector.settings)
        }
    }

    func close() {
        let session = state.withLock { state -> PostgresSession? in
            defer { state.session = nil }
            return state.session
        }
        session?.close()
    }
}
