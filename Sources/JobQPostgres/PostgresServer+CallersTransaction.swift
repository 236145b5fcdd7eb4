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

    /// Enqueues self-contained jobs in the application's transaction with one statement
    /// (``SelfContainedInsert``): one round trip, without a savepoint. The statement checks the
    /// connection's database itself and writes nothing when it is another; a store missing from
    /// the connection's database is an error of the statement, which aborts the application's
    /// transaction as any failed statement does.
    func enqueueSelfContained(_ requests: [JobRequest], in connection: PostgresConnection) async throws -> [Job] {
        let insert = SelfContainedInsert(
            requests, now: StoreSQL.now(), names: settings.schemaNames, callersDatabase: settings.database)
        let sql = settings.schemaNames.qualified(insert.sql)
        let result: StatementResult
        do {
            // Prepared on the application's connection where the settings allow: parsing and
            // planning the statement each time cost four times what running it does.
            result =
                settings.preparesStatements
                ? try await insert.runPrepared(on: connection, names: settings.schemaNames, logger: logger)
                : try await PostgresSession.runOnce(sql, insert.values, on: connection, logger: logger)
        } catch let error where ["42P01", "3F000", "42883"].contains(PostgresStoreError.sqlState(error)) {
            throw JobQueueError.invalidInput(
                "the application's connection reaches no jobq store at \(settings.schemaNames.table("jobs")) "
                    + "(\(PostgresStoreError.from(error, sql: sql))): connect it to the store's database '\(settings.database)'; "
                    + "PostgreSQL has aborted the application's transaction, roll it back")
        } catch {
            throw PostgresStoreError.from(error, sql: sql)
        }
        return try insert.jobs(from: result)
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
