import Foundation
import JobQCore
import Logging
import PostgresNIO
import Testing

@testable import JobQPostgres

/// A plain job enqueued in the application's transaction on PostgreSQL is one statement
/// without a savepoint: what that changes, and what it must not.
@Suite("PostgreSQL: the one-statement enqueue in the application's transaction", .serialized)
struct PostgresCallersStatementTests {
    let logger = PostgresTestServer.logger

    private func echo(_ n: Int) throws -> JobRequest {
        try JobRequest(executor: "echo", payloadJSON: #"{"n":\#(n)}"#)
    }

    /// A connection to another database writes nothing there or in the store: one without
    /// jobq's tables fails its statement; one with a store of its own is refused by the
    /// statement's check, which names the database.
    @Test(.enabled(if: PostgresTestServer.available, PostgresTestServer.skipReason))
    func aConnectionToAnotherDatabaseIsRefusedAndWritesNothing() async throws {
        try await PostgresTestServer.withFreshDatabase { storeSettings in
            let queue = try await JobQueue(postgres: storeSettings, logger: logger)
            try await PostgresTestServer.withFreshDatabase { bare in
                let connection = try await PostgresConnector(settings: bare, logger: logger).connect()
                try await connection.query("BEGIN", logger: logger)
                await #expect {
                    try await queue.enqueue(try echo(1), in: connection)
                } throws: { error in
                    guard case JobQueueError.invalidInput(let text) = error else { return false }
                    return text.contains("reaches no jobq store") && text.contains(storeSettings.database)
                }
                _ = try? await connection.query("ROLLBACK", logger: logger)
                try await connection.close()
            }
            try await PostgresTestServer.withFreshDatabase { otherStore in
                let other = try await JobQueue(postgres: otherStore, logger: logger)
                let connection = try await PostgresConnector(settings: otherStore, logger: logger).connect()
                try await connection.query("BEGIN", logger: logger)
                await #expect {
                    try await queue.enqueue(contentsOf: [try echo(1), try echo(2)], in: connection)
                } throws: { error in
                    guard case JobQueueError.invalidInput(let text) = error else { return false }
                    return text.contains("is to database '\(otherStore.database)'")
                        && text.contains("not to the store's '\(storeSettings.database)'")
                }
                // Nothing failed on the server: the application's transaction goes on.
                try await connection.query("COMMIT", logger: logger)
                try await connection.close()
                #expect(try await other.jobs().isEmpty)
            }
            #expect(try await queue.jobs().isEmpty)
            #expect(try await queue.events(after: 0).isEmpty)
        }
    }

    /// A server error in jobq's one statement (here its write lock not granted within the
    /// application's lock_timeout) aborts the application's transaction, as an error in its own
    /// statement would; with `savepoint: true` the application commits its own row without the job.
    @Test(.enabled(if: PostgresTestServer.available, PostgresTestServer.skipReason))
    func aServerErrorAbortsTheTransactionUnlessASavepointIsAsked() async throws {
        try await PostgresTestServer.withFreshDatabase { settings in
            let queue = try await JobQueue(postgres: settings, logger: logger)
            try await PostgresTestServer.execute(
                settings, "CREATE TABLE public.app_orders (id bigserial PRIMARY KEY, note text NOT NULL)")
            // Another session holds jobq's write lock exclusively (as a long rule change would).
            let holder = try await PostgresConnector(settings: settings, logger: logger).connect()
            try await holder.query(
                PostgresQuery(
                    unsafeSQL: settings.schemaNames.qualified("SELECT pg_advisory_lock(jobq_write_lock_key())")),
                logger: logger)
            let app = try await PostgresConnector(settings: settings, logger: logger).connect()
            for savepoint in [false, true] {
                try await app.query("BEGIN", logger: logger)
                try await app.query("SET LOCAL lock_timeout = '100ms'", logger: logger)
                try await app.query(
                    "INSERT INTO public.app_orders (note) VALUES (\(savepoint ? "kept" : "lost"))", logger: logger)
                await #expect(throws: JobQueueError.self) {
                    try await queue.enqueue(try echo(1), in: app, savepoint: savepoint)
                }
                try await app.query("COMMIT", logger: logger)
            }
            try await holder.close()
            let notes = try await PostgresTestServer.rows(
                settings, "SELECT note FROM public.app_orders ORDER BY id", as: String.self)
            #expect(notes == ["kept"], "the aborted transaction lost its row; the savepoint kept the other's")
            #expect(try await queue.jobs().isEmpty)
            // The store works on once the lock is free.
            try await app.query("BEGIN", logger: logger)
            let job = try await queue.enqueue(try echo(2), in: app)
            try await app.query("COMMIT", logger: logger)
            try await app.close()
            #expect(try await queue.jobs().map(\.id) == [job.id])
        }
    }

    /// Two stores in two schemas of one database, enqueued into on one application connection:
    /// each store's statement is prepared there under a name of its own, and each job lands in
    /// the store it was enqueued to, one at a time and in batches.
    @Test(.enabled(if: PostgresTestServer.available, PostgresTestServer.skipReason))
    func twoStoresOnOneConnectionEachGetTheirOwnJobs() async throws {
        try await PostgresTestServer.withFreshDatabase { settings in
            var first = settings
            first.schema = "jobq_first"
            var second = settings
            second.schema = "jobq_second"
            let one = try await JobQueue(postgres: first, logger: logger)
            let two = try await JobQueue(postgres: second, logger: logger)
            let app = try await PostgresConnector(settings: settings, logger: logger).connect()
            for round in 0..<3 {
                try await app.query("BEGIN", logger: logger)
                _ = try await one.enqueue(try echo(round), in: app)
                _ = try await two.enqueue(try echo(100 + round), in: app)
                _ = try await two.enqueue(contentsOf: [try echo(200 + round), try echo(300 + round)], in: app)
                _ = try await one.enqueue(contentsOf: [try echo(400 + round), try echo(500 + round)], in: app)
                try await app.query("COMMIT", logger: logger)
            }
            try await app.close()
            func numbers(_ queue: JobQueue) async throws -> [String] {
                try await queue.jobs().sorted { $0.id < $1.id }.map(\.payloadJSON)
            }
            #expect(
                try await numbers(one)
                    == (0..<3).flatMap { [#"{"n":\#($0)}"#, #"{"n":\#(400 + $0)}"#, #"{"n":\#(500 + $0)}"#] })
            #expect(
                try await numbers(two)
                    == (0..<3).flatMap {
                        [#"{"n":\#(100 + $0)}"#, #"{"n":\#(200 + $0)}"#, #"{"n":\#(300 + $0)}"#]
                    })
        }
    }

    /// A hundred jobs in one application transaction: invisible until it commits, then in the
    /// order given (ascending ids), each with its `enqueued` event, and as returned.
    @Test(.enabled(if: PostgresTestServer.available, PostgresTestServer.skipReason))
    func aBatchCommitsWithTheTransactionInTheOrderGiven() async throws {
        try await PostgresTestServer.withFreshDatabase { settings in
            let queue = try await JobQueue(postgres: settings, logger: logger)
            let app = try await PostgresConnector(settings: settings, logger: logger).connect()
            try await app.query("BEGIN", logger: logger)
            let returned = try await queue.enqueue(contentsOf: (0..<100).map(echo), in: app)
            #expect(try await queue.jobs().isEmpty, "nothing visible before the application commits")
            try await app.query("COMMIT", logger: logger)
            try await app.close()
            let stored = try await queue.jobs().sorted { $0.id < $1.id }
            #expect(stored.map(\.payloadJSON) == (0..<100).map { #"{"n":\#($0)}"# })
            #expect(stored.map(\.id) == returned.map(\.id))
            #expect(stored.map(\.createdAt) == returned.map(\.createdAt))
            let events = try await queue.events(after: 0)
            #expect(events.map(\.jobID) == stored.map { Optional($0.id) })
            #expect(events.allSatisfy { $0.kind == .enqueued })
        }
    }
}
