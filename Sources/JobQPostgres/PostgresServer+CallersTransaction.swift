import Foundation
import JobQCore
import JobQSQL
import Logging
import PostgresNIO

/// jobq's writes in a transaction the application holds on its own connection (postgres-nio's
/// `PostgresConnection`, inside `BEGIN` or `PostgresClient.withTransaction`): the statements of
/// jobq's own write transactions, with the same write lock and the same notifications, which
/// PostgreSQL delivers when the application commits, and never if it rolls back.
extension PostgresServer {
    /// Runs `body` in the application's transaction on `connection`, inside a savepoint: jobq's
    /// writes are all there or none, even when the application catches jobq's error and commits
    /// its own. The write lock (``WriteLock``) is held until the application's transaction ends.
    func inCallersTransaction<T: Sendable>(
        _ connection: PostgresConnection, lock: WriteLock, audience: CommitAudience,
        _ body: @escaping @Sendable (ServerTransaction) throws -> T
    ) async throws -> T {
        let settings = self.settings
        let logger = self.logger
        // The statements block the thread until the server answers: never one of Swift
        // concurrency's few.
        return try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(
                    with: Result {
                        // The application's connection: no watchdog may close it.
                        let session = PostgresSession(
                            connection: connection, names: settings.schemaNames, logger: logger, deadline: nil)
                        try Self.savepoint(session)
                        do {
                            // The lock and notifications, and which database this is, in one round trip.
                            let prelude = try session.run(Self.prelude(audience, lock) + ", current_database()", [])
                            try Self.checkDatabase(prelude.rows.first?.last.flatMap(String.from), settings: settings)
                            let result = try ServerTransaction(session: session, dialect: .postgres).writing(body)
                            _ = try session.run("RELEASE SAVEPOINT jobq_write", [])
                            return result
                        } catch {
                            _ = try? session.run("ROLLBACK TO SAVEPOINT jobq_write", [])
                            _ = try? session.run("RELEASE SAVEPOINT jobq_write", [])
                            throw error
                        }
                    })
            }
        }
    }

    /// Opens jobq's savepoint; outside a transaction block PostgreSQL refuses it (each statement
    /// would commit on its own, so half an enqueue could), and so does jobq.
    private static func savepoint(_ session: PostgresSession) throws {
        do {
            _ = try session.run("SAVEPOINT jobq_write", [])
        } catch JobQueueError.storeUnavailable(let message) where message.contains("SQLSTATE 25P01") {
            throw JobQueueError.invalidState(
                "enqueueing in the application's transaction needs one: call it inside `client.withTransaction { connection in ... }` "
                    + "or after BEGIN on that connection")
        }
    }

    /// Refuses a connection to another database than the store's.
    private static func checkDatabase(_ database: String?, settings: PostgresSettings) throws {
        guard let database, database == settings.database else {
            throw JobQueueError.invalidInput(
                "the application's connection is to database '\(database ?? "?")', not to the store's '\(settings.database)': "
                    + "connect to the store's database so that both commit together")
        }
    }
}
