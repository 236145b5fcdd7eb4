import Foundation
import GRDB
import JobQPostgres
import Logging
import PostgresNIO
import Synchronization
import Testing

@testable import JobQCore
@testable import JobQSQL

/// A PostgreSQL store copied to SQLite: its feed runs in commit order, which ids follow only
/// mostly; the copy keeps the order and renumbers the events after an out-of-order one, says so,
/// and translates a follower's cursor.
@Suite(.enabled(if: PostgresTestServer.available, PostgresTestServer.skipReason))
struct PostgresCopyTests {
    @Test func aFeedWhoseIdsAreOutOfCommitOrderIsRenumberedInItsOrder() async throws {
        let settings = try await PostgresTestDatabases.shared.fresh()
        let source = try await JobQueue(postgres: settings, logger: PostgresTestServer.logger)
        _ = try await source.enqueue(try JobRequest(executor: "echo", payloadJSON: #"{"n": 0}"#))
        // The application's transaction takes its transaction id first, then a plain enqueue
        // commits an event with a lower id than the one the application's transaction writes
        // after it: in the feed (commit order) the higher id comes first.
        let connection = try await PostgresConnector(settings: settings, logger: PostgresTestServer.logger).connect()
        try await connection.query("BEGIN", logger: PostgresTestServer.logger)
        try await connection.query("SELECT pg_current_xact_id()", logger: PostgresTestServer.logger)
        let plain = try await source.enqueue(try JobRequest(executor: "echo", payloadJSON: #"{"n": 1}"#))
        let inApp = try await source.enqueue(
            try JobRequest(executor: "echo", payloadJSON: #"{"n": 2}"#), in: connection)
        try await connection.query("COMMIT", logger: PostgresTestServer.logger)
        try await connection.close()
        _ = try await source.enqueue(try JobRequest(executor: "echo", payloadJSON: #"{"n": 3}"#))
        let sourceFeed = try await source.events(after: 0, limit: 100)
        #expect(sourceFeed.compactMap(\.jobID) == [1, inApp.id, plain.id, 4])
        #expect(
            sourceFeed.map(\.id) != sourceFeed.map(\.id).sorted(),
            "the feed's ids were in order: \(sourceFeed.map(\.id))")

        let store = try TemporaryStore()
        let destination = try JobQueue(path: store.path)
        let progress = ProgressLog()
        let report = try await source.copy(to: destination) { progress.add($0) }
        #expect(report.verified, "\(report.tables.filter { !$0.matches })")
        #expect(!report.eventIDs.idsKept)
        #expect(progress.tables.contains("jobs") && progress.tables.contains("events"))

        // The same events in the same order, each with its new id.
        let copiedFeed = try await destination.events(after: 0, limit: 100)
        #expect(copiedFeed.map(\.jobID) == sourceFeed.map(\.jobID))
        #expect(copiedFeed.map(\.kind) == sourceFeed.map(\.kind))
        #expect(copiedFeed.map(\.id) == copiedFeed.map(\.id).sorted())
        for (old, new) in zip(sourceFeed, copiedFeed) {
            #expect(report.eventIDs.cursor(afterSourceCursor: old.id) == new.id)
            // A follower that had read up to `old` reads on from the event after it.
            let next = try await destination.events(after: report.eventIDs.cursor(afterSourceCursor: old.id), limit: 1)
            let expected = sourceFeed.firstIndex { $0.id == old.id }.map { $0 + 1 }.flatMap {
                $0 < sourceFeed.count ? sourceFeed[$0].jobID : nil
            }
            #expect(next.first?.jobID == expected)
        }
        let record = try #require(try await destination.copyRecord())
        #expect(record.renumberedThrough == report.eventIDs.newestDestination)
        // New jobs and events come after the copied ones (on SQLite a job's id is its
        // `enqueued` event's, so it comes after the newest event).
        let later = try await destination.enqueue(try JobRequest(executor: "echo", payloadJSON: "{}"))
        #expect(later.id == report.eventIDs.newestDestination + 1)
        let tail = try await destination.events(after: report.eventIDs.newestDestination, limit: 10)
        #expect(tail.map(\.jobID) == [later.id])

        // `jobq events` with a cursor among the renumbered ones says so.
        let events = try await CLI.run(["events", "--since", "1"], db: store.path)
        #expect(events.status == 0)
        #expect(events.stderr.contains("renumbered event ids up to"), "\(events.stderr)")
    }

    @Test func jobsWithMegabytePayloadsAreCopiedInPagesThatStaySmall() async throws {
        let store = try TemporaryStore()
        let source = try JobQueue(path: store.path)
        // 12 payloads of nearly 1 MiB (the most a payload may be): more than one INSERT's 8 MiB.
        let filler = String(repeating: "x", count: (1 << 20) - 100)
        let requests = try (1...12).map {
            try JobRequest(executor: "echo", payloadJSON: #"{"n": \#($0), "blob": "\#(filler)"}"#)
        }
        _ = try await source.enqueue(contentsOf: requests)
        let destination = try await JobQueue(
            postgres: try await PostgresTestDatabases.shared.fresh(), logger: PostgresTestServer.logger)
        let report = try await source.copy(to: destination)
        #expect(report.verified)
        #expect(report.tables.first { $0.name == "jobs" }?.destinationRows == 12)
        let copied = try #require(try await destination.job(12))
        #expect(copied.payloadJSON.utf8.count > 1_000_000)
        // A page of such rows is cut to what holds 32 MiB.
        var size = CopyPageSize(most: 2_000)
        size.read(rows: 2_000, bytes: 2_000 << 20)
        #expect(size.current == 32)
        size.read(rows: 32, bytes: 32 * 100)
        #expect(size.current == 2_000)
    }

    /// An SQLite store of an earlier jobq may hold a priority beyond 32 bits: its copy to
    /// PostgreSQL is refused before anything is written, saying which row (it once failed midway
    /// with a raw SQLSTATE 22003 and left the destination marked as being filled); once the row
    /// is fixed, the copy goes through.
    @Test func aPriorityBeyondThirtyTwoBitsIsRefusedBeforeTheCopyWrites() async throws {
        let store = try TemporaryStore()
        let source = try JobQueue(path: store.path)
        let job = try await source.enqueue(try JobRequest(executor: "echo", payloadJSON: "{}"))
        try await IsolationTests.rawWrite(source) { db in
            try db.execute(sql: "UPDATE jobq_jobs SET priority = 3000000000 WHERE id = ?", arguments: [job.id])
        }
        let settings = try await PostgresTestDatabases.shared.fresh()
        let destination = try await JobQueue(postgres: settings, logger: PostgresTestServer.logger)
        await #expect {
            _ = try await source.copy(to: destination)
        } throws: { error in
            guard case JobQueueError.invalidInput(let message) = error else { return false }
            return message.contains("jobs row \(job.id) (priority 3000000000)")
                && message.contains("Nothing was written")
        }
        try await IsolationTests.rawWrite(source) { db in
            try db.execute(sql: "UPDATE jobq_jobs SET priority = 5 WHERE id = ?", arguments: [job.id])
        }
        let report = try await source.copy(to: destination)
        #expect(report.verified)
        #expect(try await destination.job(job.id)?.priority == 5)
    }

    /// A text holding a NUL (stored before jobq refused them) is copied whole to SQLite, and the
    /// check reads it whole (both once cut it at the NUL and called the copy the same); to
    /// PostgreSQL, whose text cannot hold it, the copy is refused naming the row.
    @Test func aTextHoldingANULIsCopiedWholeOrRefusedNamingItsRow() async throws {
        let store = try TemporaryStore()
        let source = try JobQueue(path: store.path)
        let job = try await source.enqueue(try JobRequest(executor: "echo", payloadJSON: "{}"))
        try await IsolationTests.rawWrite(source) { db in
            try db.execute(
                sql: "UPDATE jobq_jobs SET error = 'before' || char(0) || 'after' WHERE id = ?", arguments: [job.id])
        }
        let copyStore = try TemporaryStore()
        let copied = try JobQueue(path: copyStore.path)
        let report = try await source.copy(to: copied)
        #expect(report.verified)
        let length = try await DatabaseQueue(path: copyStore.path).read { db in
            try Int.fetchOne(
                db, sql: "SELECT length(CAST(error AS BLOB)) FROM jobq_jobs WHERE id = ?", arguments: [job.id])
        }
        #expect(length == 12, "the text after the NUL was copied too")

        let settings = try await PostgresTestDatabases.shared.fresh()
        let destination = try await JobQueue(postgres: settings, logger: PostgresTestServer.logger)
        await #expect {
            _ = try await source.copy(to: destination)
        } throws: { error in
            guard case JobQueueError.invalidInput(let message) = error else { return false }
            return message.contains("row \(job.id) of jobq_jobs holds a NUL") && message.contains("error")
        }
        // The destination stays marked as being filled: an enqueue there is refused with what
        // to do (it once failed with a raw duplicate key on an id the copy was to write).
        await #expect {
            _ = try await destination.enqueue(try JobRequest(executor: "echo", payloadJSON: "{}"))
        } throws: { error in
            "\(error)".contains("being filled by `jobq copy`") && "\(error)".contains("Run the same copy again")
        }
        #expect(try await destination.jobs().isEmpty)
        try await IsolationTests.rawWrite(source) { db in
            try db.execute(sql: "UPDATE jobq_jobs SET error = 'fixed' WHERE id = ?", arguments: [job.id])
        }
        #expect(try await source.copy(to: destination).verified)
        let after = try await destination.enqueue(try JobRequest(executor: "echo", payloadJSON: "{}"))
        #expect(after.id == job.id + 1, "a new job takes an id after the copied ones")
    }

    /// The same guard on SQLite: while a copy fills the store, an enqueue is refused.
    @Test func anEnqueueIntoAnSQLiteStoreBeingFilledIsRefused() async throws {
        let store = try TemporaryStore()
        let queue = try JobQueue(path: store.path)
        try await IsolationTests.rawWrite(queue) { db in
            try CopyPlan.Setting.set(db, [(CopyPlan.Setting.source, 1)])
            try CopyGuard.install(db)
        }
        await #expect {
            _ = try await queue.enqueue(try JobRequest(executor: "echo", payloadJSON: "{}"))
        } throws: { error in
            "\(error)".contains("being filled by `jobq copy`")
        }
        try await IsolationTests.rawWrite(queue) { db in
            try CopyGuard.writing(db) {
                try db.execute(
                    sql: """
                        INSERT INTO jobq_jobs (id, queue, executor, payload, state, max_attempts, run_at, created_at)
                        VALUES (7, 'default', 'echo', '{}', 'ready', 3, 0, 0)
                        """)
            }
        }
        #expect(try await queue.job(7) != nil, "the copy's own insert goes through")
    }

    @Test func liveWorkersAndAStoreWithDataAreRefusedWithNothingWritten() async throws {
        let store = try TemporaryStore()
        let source = try JobQueue(path: store.path)
        _ = try await source.enqueue(try JobRequest(executor: "echo", payloadJSON: "{}"))
        let settings = try await PostgresTestDatabases.shared.fresh()
        let destination = try await JobQueue(postgres: settings, logger: PostgresTestServer.logger)
        _ = try await destination.enqueue(try JobRequest(executor: "sum", payloadJSON: #"{"a": 1, "b": 2}"#))
        await #expect {
            _ = try await source.copy(to: destination)
        } throws: { error in
            "\(error)".contains("the destination is not empty")
        }
        #expect(try await destination.count(where: .all) == 1)

        // A live worker on the source.
        let pool = WorkerPool(queue: source, executors: BuiltinExecutors.all, options: quickOptions(stopWhen: .never))
        let running = Task { try await pool.run() }
        defer { running.cancel() }
        let empty = try await JobQueue(
            postgres: try await PostgresTestDatabases.shared.fresh(), logger: PostgresTestServer.logger)
        try await eventually(.seconds(30), "the worker to beat") { try await source.status().workers.count == 1 }
        await #expect {
            _ = try await source.copy(to: empty)
        } throws: { error in
            "\(error)".contains("live on the source")
        }
        #expect(try await empty.count(where: .all) == 0)
        let report = try await source.copy(to: empty, options: StoreCopyOptions(allowLiveWorkers: true))
        #expect(report.verified)
    }
}

/// The tables a copy reported progress on.
final class ProgressLog: Sendable {
    private let seen = Mutex<[String]>([])
    func add(_ progress: StoreCopyProgress) { seen.withLock { $0.append(progress.table) } }
    var tables: Set<String> { Set(seen.withLock { $0 }) }
}
