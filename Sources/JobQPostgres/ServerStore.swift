import Foundation
import JobQCore

/// A store on a database server: jobq's SQL (the `SQLStore` extensions) run in the server's
/// transactions. Workers on many machines share it; each machine's processes learn of the
/// others' commits through the server (``SQLServer/otherCommitsWatch(for:)``).
final class ServerStore: SQLStore {
    let server: any SQLServer
    let commitObservers = Callbacks()

    init(server: any SQLServer) {
        self.server = server
    }

    var path: String? { nil }

    var writesOverlap: Bool { true }

    func write<T: Sendable>(
        _ length: TransactionLength, audience: CommitAudience, lock: WriteLock,
        _ body: @escaping @Sendable (ServerTransaction) throws -> T
    ) async throws -> T {
        let dialect = server.dialect
        let result = try await server.write(audience: audience, lock: lock) { session in
            try body(ServerTransaction(session: session, dialect: dialect))
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

    /// A look at the server costs a round trip; the claim loop looks itself.
    func claimOutlookHere(queues: [String]) -> ClaimOutlook? { nil }
}

extension JobQueue {
    /// A queue on a database server's store, e.g. `JobQPostgres`'s PostgreSQL.
    package convenience init(server: any SQLServer) {
        self.init(store: ServerStore(server: server))
    }
}
