import Foundation
import JobQCore
import JobQSQL

/// The PostgreSQL store: jobq's rules (the `SQLStore` extensions) run in the server's
/// transactions, and its hot path is its own — an enqueue of self-contained jobs, a claim and a
/// worker's successes are each one statement that commits on its own
/// (`SelfContainedEnqueue.swift`, `ServerStore+Claim.swift`, `RecordSuccesses.swift`). Workers
/// on many machines share it; each machine's processes learn of the others' commits through the
/// server (``PostgresServer/otherCommitsWatch(for:)``).
final class ServerStore: SQLStore {
    let server: PostgresServer
    let commitObservers = Callbacks()

    init(server: PostgresServer) {
        self.server = server
    }

    var path: String? { nil }

    func indexReference(_ name: String) -> String { server.settings.schemaNames.quotedSchema + "." + name }

    func write<T: Sendable>(
        _ length: TransactionLength, audience: CommitAudience, lock: WriteLock,
        _ body: @escaping @Sendable (ServerTransaction) throws -> T
    ) async throws -> T {
        let dialect = server.dialect
        let result = try await server.write(audience: audience, lock: lock) { session in
            try ServerTransaction(session: session, dialect: dialect).writing(body)
        }
        commitObservers.callAll()
        return result
    }

    func read<T: Sendable>(_ length: TransactionLength, _ body: @escaping @Sendable (ServerTransaction) throws -> T)
        async throws -> T
    {
        let dialect = server.dialect
        return try await server.read { session in try body(ServerTransaction(session: session, dialect: dialect)) }
    }

    static func schemaVersion(_ db: ServerTransaction) throws -> Int {
        try db.fetchOne(Int.self, sql: "SELECT COALESCE(MAX(version), 0) FROM jobq_schema_migrations") ?? 0
    }

    func addCommitObserver(_ observer: @escaping @Sendable () -> Void) -> UUID { commitObservers.add(observer) }

    func removeCommitObserver(_ token: UUID) { commitObservers.remove(token) }

    func otherCommitsWatch(for interest: CommitInterest) -> (any OtherCommitsWatch)? {
        server.otherCommitsWatch(for: interest)
    }

    var reclaimsHeldOff: Bool {
        ServerOutage.outOfReach(within: ServerOutage.reclaimHold, settings: server.settings)
    }

    /// A look at the server costs a round trip; the claim loop looks itself.
    func claimOutlookHere(queues: [String]) -> ClaimOutlook? { nil }

    /// Writes overlap here: a page waits for the transactions running when it was asked for.
    func events(after cursor: Int64, filter: EventFilter, limit: Int) async throws -> [JobEvent] {
        try await eventsBehindRunningWrites(after: cursor, filter: filter, limit: limit)
    }
}

extension JobQueue {
    /// A queue on a PostgreSQL server's store.
    convenience init(server: PostgresServer) {
        self.init(store: ServerStore(server: server))
    }
}
