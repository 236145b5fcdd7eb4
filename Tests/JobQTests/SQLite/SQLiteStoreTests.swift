import Foundation
import GRDB
import Testing

@testable import JobQCore
@testable import JobQSQL
@testable import JobQSQLite

@Suite("The store file and its schema")
struct StoreTests {
    /// Commits past 1000 WAL pages no longer copy the WAL back themselves (SQLite's default,
    /// ~5 ms in one unlucky commit): a background checkpoint does, and the WAL stays bounded
    /// when commits never pause.
    @Test func theWALIsCheckpointedInTheBackgroundAndStaysBounded() async throws {
        let store = try TemporaryStore()
        let queue = try store.open()
        func size(_ path: String) -> Int {
            ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? Int) ?? 0
        }
        let fileBefore = size(store.path)
        // ~1500 WAL pages: past the background threshold, far below the inline one.
        let payload = #"{"blob":""# + String(repeating: "x", count: 3000) + #""}"#
        for _ in 0..<500 { try await queue.enqueue(try JobRequest(executor: "echo", payloadJSON: payload)) }
        #expect(size(store.path + "-wal") > 1000 * 4096, "the writes did not grow the WAL as expected")
        // The background checkpoint copies at least the thousand pages that started it (about a
        // third of the jobs: the rest may stay in the WAL until the next commit, when it starts
        // later on a loaded machine and the next one is not due before the writes end).
        try await EventProcessTests.waitFor("the WAL to be copied into the database file", timeout: 30) {
            size(store.path) > fileBefore + 250 * 3000
        }
        // Commits that never pause: the WAL still stops growing (the inline checkpoint at 2000
        // pages, then one more transaction), where no checkpoint at all would take it past
        // 20,000 pages.
        for _ in 0..<20 {
            try await queue.enqueue(
                contentsOf: (0..<1000).map { _ in try JobRequest(executor: "echo", payloadJSON: payload) })
        }
        #expect(size(store.path + "-wal") < 5_000 * 4096, "WAL of \(size(store.path + "-wal") / 4096) pages")
    }

    /// Each background checkpoint syncs two files. A writer that never pauses must not start one
    /// after every commit past the threshold (they ran back to back, each copying a commit or
    /// two, and slowed single enqueues ~7%): one per ``WALCheckpointer/backgroundStep`` pages.
    @Test func backgroundCheckpointsWaitForHundredsOfNewPagesNotEveryCommit() async throws {
        let store = try TemporaryStore()
        let checkpointer = WALCheckpointer(path: store.path)
        var configuration = Configuration()
        configuration.prepareDatabase { db in
            if let connection = db.sqliteConnection { checkpointer.install(on: connection) }
        }
        let pool = try DatabasePool(path: store.path, configuration: configuration)
        try await pool.write { try $0.execute(sql: "CREATE TABLE t (x TEXT)") }
        // ~2 pages a commit, 900 commits: past 1000 pages at about the 500th, then 400 more
        // commits with a checkpoint free to start after each.
        let blob = String(repeating: "x", count: 5000)
        for _ in 0..<900 { try await pool.write { try $0.execute(sql: "INSERT INTO t VALUES (?)", arguments: [blob]) } }
        checkpointer.close()  // waits for one under way
        let runs = checkpointer.backgroundCheckpoints
        #expect((1...4).contains(runs), "\(runs) background checkpoints for ~800 pages past the threshold")
        #expect(try await pool.read { try Int.fetchOne($0, sql: "SELECT count(*) FROM t") } == 900)
    }

    /// SQLite reads its process-wide settings once: tuning after a store is open must say it
    /// changed nothing, rather than claim it applied (and the open store keeps working).
    @Test func tuningSQLiteOnceItIsInUseChangesNothingAndSaysSo() async throws {
        let store = try TemporaryStore()
        let queue = try store.open()
        #expect(JobQueue.tuneSQLiteBeforeFirstUse() == false)
        let job = try await queue.enqueue(SumExecutor.self, .init(a: 1, b: 2))
        #expect(try await queue.job(job.id)?.state == .ready)
    }

    @Test func newStoreIsPrivateWALAndAtTheLatestSchema() throws {
        let store = try TemporaryStore()
        _ = try JobQueue(path: store.path)  // made by jobq, not copied (TemporaryStore.open)
        let attributes = try FileManager.default.attributesOfItem(atPath: store.path)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        let db = try DatabaseQueue(path: store.path)
        try db.read { db in
            #expect(try String.fetchOne(db, sql: "PRAGMA journal_mode") == "wal")
            // `user_version` is the application's: jobq's version is in its own table.
            #expect(try Int.fetchOne(db, sql: "PRAGMA user_version") == 0)
            #expect(try SchemaMigrator.currentVersion(db) == SchemaMigration.latestVersion)
            let recorded = try Row.fetchAll(
                db, sql: "SELECT version, name, checksum FROM jobq_schema_migrations ORDER BY version")
            #expect(recorded.count == SchemaMigration.all.count)
            #expect(recorded.first?["name"] == "0001_create_jobs.sql")
            #expect((recorded.first?["checksum"] as String?) == SchemaMigration.all[0].checksum)
        }
    }

    @Test func reopeningKeepsJobsAndDoesNotMigrateAgain() async throws {
        let store = try TemporaryStore()
        let job = try await store.open().enqueue(SumExecutor.self, .init(a: 1, b: 2))
        let reopened = try store.open()
        #expect(try await reopened.job(job.id)?.payloadJSON == job.payloadJSON)
    }

    @Test func claimUsesTheClaimIndexInItsOrder() throws {
        let store = try TemporaryStore()
        _ = try store.open()
        let db = try DatabaseQueue(path: store.path)
        let plan = try db.read { db in
            // The claim's own read, deadline condition included: queue, limit, now.
            try Row.fetchAll(
                db, sql: "EXPLAIN QUERY PLAN " + StoreSQL.claimReadSQL, arguments: ["default", 10, 0.0]
            ).map { $0["detail"] as String }
        }
        #expect(plan.contains { $0.contains("jobs_claim_order") })
        #expect(!plan.contains { $0.contains("TEMP B-TREE") }, "the claim must not sort: \(plan)")
    }

    /// The deadline sweep reads only the partial index of unfinished jobs with a deadline.
    @Test func theExpirySweepReadsOnlyJobsWithADeadline() throws {
        let store = try TemporaryStore()
        _ = try store.open()
        let plan = try DatabaseQueue(path: store.path).read { db in
            try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + StoreSQL.overdueSQL(limit: 10), arguments: [0.0]).map {
                $0["detail"] as String
            }
        }
        #expect(plan.contains { $0.contains("jobq_jobs_expiring") }, "\(plan)")
        #expect(!plan.contains { $0.contains("TEMP B-TREE") }, "\(plan)")
    }

    @Test(arguments: [
        StoreSQL.anyUnfinishedNowSQL[.sqlite], StoreSQL.claimOutlookSQL[.sqlite], StoreSQL.anyUnfinishedSQL[.sqlite],
        StoreSQL.backlogSQL[.sqlite]
    ])
    func idlePollsNeverScanTheHistory(sql: String) throws {
        let store = try TemporaryStore()
        _ = try store.open()
        let plan = try DatabaseQueue(path: store.path).read { db in
            let arguments: StatementArguments = sql.contains("?2") ? [#"["default"]"#, 0.0] : [#"["default"]"#]
            return try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + sql, arguments: arguments).map {
                $0["detail"] as String
            }
        }
        // Scans are allowed only over the partial indexes of unfinished jobs (running jobs are
        // few); never over the table or an index that holds finished jobs.
        let unfinishedIndexes = ["jobs_claim_order", "jobs_leases", "jobs_due", "jobs_waiting"]
        for line in plan where line.contains(" jobq_jobs") {
            #expect(
                unfinishedIndexes.contains { line.contains($0) }, "reads more than unfinished jobs: \(line) in \(plan)")
        }
    }

    /// Status counts come from partial indexes; they must equal a plain count of every row.
    @Test func statusCountsEqualAPlainCountInEveryState() async throws {
        let store = try TemporaryStore()
        let queue = try store.open()
        for name in ["a", "b"] {
            var options = JobOptions(queue: name)
            _ = try await queue.enqueue(
                contentsOf: (0..<5).map { _ in try JobRequest(executor: "sum", payloadJSON: "{}", options: options) })
            options.runAt = Date().addingTimeInterval(3600)
            _ = try await queue.enqueue(
                contentsOf: (0..<3).map { _ in try JobRequest(executor: "sum", payloadJSON: "{}", options: options) })
        }
        // Move some jobs into every other state the way the store's own statements would.
        try await DatabaseQueue(path: store.path).write { db in
            let now = Date().timeIntervalSince1970
            try db.execute(
                sql: "UPDATE jobq_jobs SET state = 'running', lease_until = ?, worker_id = 'w' WHERE id IN (1, 9)",
                arguments: [now + 60])
            try db.execute(
                sql: "UPDATE jobq_jobs SET state = 'succeeded', finished_at = ? WHERE id IN (2, 3, 10)",
                arguments: [now])
            try db.execute(sql: "UPDATE jobq_jobs SET state = 'dead', finished_at = ? WHERE id = 4", arguments: [now])
            try db.execute(
                sql: "UPDATE jobq_jobs SET state = 'cancelled', finished_at = ? WHERE id = 11", arguments: [now])
            try db.execute(
                sql: "UPDATE jobq_jobs SET state = 'failed', run_at = ? WHERE id = 12", arguments: [now + 60])
        }
        let plain = try await DatabaseQueue(path: store.path).read { db in
            try Row.fetchAll(db, sql: "SELECT queue, state, COUNT(*) AS n FROM jobq_jobs GROUP BY queue, state")
                .map { "\($0["queue"] as String) \($0["state"] as String) \($0["n"] as Int)" }
        }
        let status = try await queue.status()
        let reported = status.queues.flatMap { queue in
            queue.counts.filter { $0.value > 0 }.map { "\(queue.name) \($0.key) \($0.value)" }
        }
        #expect(Set(reported) == Set(plain))
        #expect(reported.count == 11, "\(reported)")
        let plan = try await DatabaseQueue(path: store.path).read { db in
            try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + StoreSQL.countsSQL[.sqlite]).map {
                $0["detail"] as String
            }
        }
        for line in plan where line.contains(" jobq_jobs") {
            #expect(line.contains("INDEX"), "status reads rows: \(line)")
        }
    }

    /// Records a migration this jobq does not know, as a newer jobq would have.
    static func recordVersion(_ version: Int, in db: Database) throws {
        try db.execute(
            sql: "INSERT INTO jobq_schema_migrations (version, name, checksum, applied_at) VALUES (?, ?, 'x', 0)",
            arguments: [version, String(format: "%04d_newer.sql", version)])
    }

    @Test func newerStoreIsRefusedAndLeftAlone() throws {
        let store = try TemporaryStore()
        _ = try store.open()
        try DatabaseQueue(path: store.path).write { try Self.recordVersion(999, in: $0) }
        let before = try BadInputTests.snapshot(store.path)
        #expect {
            _ = try store.open()
        } throws: { error in
            guard case JobQueueError.incompatibleStore(let message) = error else { return false }
            return message.contains("version 999") && message.contains("version \(SchemaMigration.latestVersion)")
                && message.contains("upgrade jobq")
        }
        #expect(try BadInputTests.snapshot(store.path) == before)
        #expect(try DatabaseQueue(path: store.path).read { try SchemaMigrator.currentVersion($0) } == 999)
    }

    @Test func editedMigrationIsRefused() throws {
        let store = try TemporaryStore()
        _ = try store.open()
        try DatabaseQueue(path: store.path).write {
            try $0.execute(sql: "UPDATE jobq_schema_migrations SET checksum = 'tampered' WHERE version = 1")
        }
        #expect {
            _ = try store.open()
        } throws: { error in
            "\(error)".contains("0001_create_jobs.sql") && "\(error)".contains("edited")
        }
    }

    @Test func notADatabaseIsAClearError() throws {
        let store = try TemporaryStore()
        try Data(repeating: 0x41, count: 8192).write(to: URL(fileURLWithPath: store.path))
        #expect {
            _ = try store.open()
        } throws: { error in
            "\(error)".contains("not a jobq store")
        }
    }

    @Test func missingDirectoryIsAClearError() throws {
        #expect {
            _ = try JobQueue(path: "/nonexistent-jobq-dir/jobs.sqlite")
        } throws: { error in
            "\(error)".contains("does not exist")
        }
    }

    @Test func sha256MatchesKnownVectors() {
        #expect(SHA256.hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(SHA256.hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(
            SHA256.hex(String(repeating: "a", count: 1000))
                == "41edece42d63e8d9bf515a9ba6932e1c20cbc9f5a5d134645adb5db1b9737ea3")
    }

    @Test(arguments: [
        ("500ms", Duration.milliseconds(500)), ("30s", .seconds(30)), ("5m", .seconds(300)), ("2h", .seconds(7200)),
        ("7d", .seconds(604_800)), ("1.5s", .milliseconds(1500)), ("1h30m", .seconds(5400)), ("0s", .zero)
    ])
    func durationsParse(text: String, expected: Duration) throws {
        #expect(try DurationParser.parse(text) == expected)
    }

    @Test(arguments: ["", "5", "s", "5x", "-5s", "1.2.3s", "5 s s", "99999999999d", "1e5s", "ms"])
    func badDurationsAreRefused(text: String) {
        #expect(throws: JobQueueError.self) { try DurationParser.parse(text) }
    }

    @Test func jobStatesParseWithAHelpfulError() throws {
        #expect(try JobState(parsing: "DEAD") == .dead)
        #expect(
            throws: JobQueueError.invalidInput(
                "unknown state 'done'; valid states are: waiting, scheduled, ready, running, succeeded, failed, dead, cancelled"
            )
        ) {
            try JobState(parsing: "done")
        }
    }
}
