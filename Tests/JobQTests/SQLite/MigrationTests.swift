import Foundation
import GRDB
import Synchronization
import Testing

@testable import JobQCore
@testable import JobQSQL
@testable import JobQSQLite

/// Serialized: most of its tests open and migrate stores synchronously, which on a parallel
/// run's start held both of a 2-core machine's concurrency threads for seconds (stack samples
/// showed two migrations there) and starved every other test's tasks.
@Suite("Schema migrations", .serialized)
struct MigrationTests {
    /// A copy of the version-1 fixture in a fresh directory.
    static func oldStore() throws -> TemporaryStore {
        let store = try TemporaryStore()
        try FileManager.default.copyItem(
            at: FixtureTests.directory.appendingPathComponent("store-v1.sqlite"), to: URL(fileURLWithPath: store.path))
        return store
    }

    static func version(_ path: String) throws -> Int? {
        try DatabaseQueue(path: path).read { try SchemaMigrator.currentVersion($0) }
    }

    static func backups(_ store: TemporaryStore) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: store.directory.path).filter { $0.hasSuffix(".backup") }
            .sorted()
    }

    @Test func migrationIsRecordedWithItsChecksumAndMirroredInUserVersion() async throws {
        let store = try Self.oldStore()
        _ = try store.open()
        let recorded = try DatabaseQueue(path: store.path).read { db in
            try Row.fetchAll(db, sql: "SELECT version, name, checksum FROM jobq_schema_migrations ORDER BY version")
        }
        #expect(recorded.map { $0["version"] as Int } == SchemaMigration.all.map(\.version))
        #expect(recorded.map { $0["name"] as String } == SchemaMigration.all.map(\.name))
        #expect(recorded.map { $0["checksum"] as String } == SchemaMigration.all.map(\.checksum))
        #expect(try Self.version(store.path) == SchemaMigration.latestVersion)
    }

    /// Version 5 rebuilds the jobs table: the ids of jobs pruned before the upgrade must stay used.
    @Test func theJobsRebuildNeverReusesTheIdsOfPrunedJobs() async throws {
        let store = try TemporaryStore()
        let writer = try DatabaseQueue(path: store.path)
        try SchemaMigrator(writer: writer, path: nil, migrations: SchemaMigration.all.filter { $0.version <= 4 })
            .migrate(backup: false)
        try await writer.write { db in
            for _ in 0..<3 {
                try db.execute(
                    sql:
                        "INSERT INTO jobq_jobs (queue, executor, payload, state, run_at, created_at) VALUES ('default', 'echo', '{}', 'ready', 0, 0)"
                )
            }
            try db.execute(sql: "DELETE FROM jobq_jobs WHERE id > 1")
        }
        try writer.close()
        let queue = try JobQueue(path: store.path, backupBeforeMigrating: false)
        let job = try await queue.enqueue(try JobRequest(executor: "echo", payloadJSON: "{}"))
        #expect(job.id == 4)
    }

    @Test func backupIsAConsistentPrivateCopyOfTheOldStore() async throws {
        let store = try Self.oldStore()
        let before = try BadInputTests.snapshot(store.path)
        _ = try store.open()
        let backups = try Self.backups(store)
        try #require(backups.count == 1)
        let backup = store.directory.appendingPathComponent(backups[0]).path
        #expect(backups[0].hasPrefix("jobq.sqlite.v1-"))
        let attributes = try FileManager.default.attributesOfItem(atPath: backup)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        #expect(try Self.version(backup) == 1)
        #expect(try BadInputTests.snapshot(backup) == before, "the backup is the store as it was before migrating")
    }

    @Test func noBackupWhenAskedNot() async throws {
        let store = try Self.oldStore()
        _ = try JobQueue(path: store.path, backupBeforeMigrating: false)
        #expect(try Self.backups(store).isEmpty)
        #expect(try Self.version(store.path) == SchemaMigration.latestVersion)
    }

    @Test func refuseIfPendingLeavesTheStoreAlone() async throws {
        let store = try Self.oldStore()
        let before = try BadInputTests.snapshot(store.path)
        #expect {
            _ = try JobQueue(path: store.path, migrations: .refuseIfPending)
        } throws: { error in
            guard case JobQueueError.incompatibleStore(let message) = error else { return false }
            return message.contains("version 1") && message.contains("0002_data_migrations.sql")
                && message.contains("jobq migrate up")
        }
        #expect(try BadInputTests.snapshot(store.path) == before)
        #expect(try Self.version(store.path) == 1)
        #expect(try Self.backups(store).isEmpty)
        let missing = store.directory.appendingPathComponent("none.sqlite").path
        #expect(throws: JobQueueError.self) { _ = try JobQueue(path: missing, migrations: .refuseIfPending) }
        #expect(!FileManager.default.fileExists(atPath: missing))
        _ = try JobQueue(path: store.path)
        _ = try JobQueue(path: store.path, migrations: .refuseIfPending)
    }

    /// A process that finds the store moved by another one's migration waits for it, instead of
    /// applying the remaining steps itself (and backing the store up a second time).
    @Test func aMigratorThatFindsAnotherOneMidWayWaitsForIt() async throws {
        let store = try TemporaryStore()
        _ = try store.open()
        let base = SchemaMigration.latestVersion
        // A slow step holds the write lock long enough for the second migrator to look in the
        // middle of the run, then queue for the lock behind it.
        let extra = [
            SchemaMigration(
                version: base + 1, name: "slow.sql",
                sql: """
                    CREATE TABLE slow (x INTEGER);
                    WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1000000)
                    INSERT INTO slow SELECT i FROM n;
                    """),
            SchemaMigration(version: base + 2, name: "next.sql", sql: "CREATE TABLE next_step (x INTEGER);"),
            SchemaMigration(version: base + 3, name: "last.sql", sql: "CREATE TABLE last_step (x INTEGER);")
        ]
        func migrator() throws -> SchemaMigrator {
            var config = Configuration()
            config.busyMode = .timeout(10)
            return SchemaMigrator(
                writer: try DatabaseQueue(path: store.path, configuration: config), path: store.path,
                migrations: SchemaMigration.all + extra)
        }
        var first = try migrator()
        // The first migrator pauses after its slow step, so the second one takes the write lock
        // between two of its steps (as a descheduled process would let it).
        first.afterStep = { step in if step.name == "slow.sql" { Thread.sleep(forTimeInterval: 0.3) } }
        let second = try migrator()
        // Both block (a slow step, a wait for the lock): on threads of their own, not on the
        // few threads the other tests' tasks run on.
        let firstMigrator = first
        let firstResult = onThread { try firstMigrator.migrate(backup: true) }
        // The second looks only once the first holds the write lock for its slow step (seen as
        // another connection's busy write), so that it looks mid-way however loaded the machine:
        // a fixed head start let it look after the slow step, on a store already moved. The
        // watch and the second migrator run on a thread of their own too: on Swift concurrency's
        // threads, busy with other tests in a parallel run, the watch could begin only after the
        // first migrator had finished.
        var probeConfig = Configuration()
        probeConfig.busyMode = .immediateError
        let probe = try DatabaseQueue(path: store.path, configuration: probeConfig)
        let secondResult = onThread {
            let deadline = Date().addingTimeInterval(20)
            while true {
                do {
                    try probe.writeWithoutTransaction { try $0.execute(sql: "BEGIN IMMEDIATE; ROLLBACK") }
                } catch {
                    break  // the first migrator holds the write lock
                }
                guard Date() < deadline else { throw TimedOut(what: "the first migrator to hold the write lock") }
                Thread.sleep(forTimeInterval: 0.002)
            }
            try probe.close()
            return try second.migrate(backup: true)
        }
        let (firstApplied, secondApplied) = (try await firstResult.value.applied, try await secondResult.value.applied)
        #expect(firstApplied.map(\.name) == ["slow.sql", "next.sql", "last.sql"])
        #expect(secondApplied.isEmpty, "the second migrator applied \(secondApplied.map(\.name))")
        #expect(try Self.backups(store).count == 1)
        #expect(try Self.version(store.path) == base + 3)
    }

    @Test func failingMigrationRollsBackAndNamesTheFileAndTheError() async throws {
        let store = try TemporaryStore()
        _ = try store.open()
        let before = try BadInputTests.snapshot(store.path)
        let broken = SchemaMigration(
            version: 99, name: "0099_broken.sql",
            sql: "CREATE TABLE half_done (x INTEGER); INSERT INTO no_such_table VALUES (1);")
        let writer = try DatabasePool(path: store.path)
        let migrator = SchemaMigrator(writer: writer, path: store.path, migrations: SchemaMigration.all + [broken])
        #expect {
            try migrator.migrate(backup: false)
        } throws: { error in
            "\(error)".contains("0099_broken.sql") && "\(error)".contains("no such table: no_such_table")
                && "\(error)".contains("unchanged at version \(SchemaMigration.latestVersion)")
        }
        try writer.close()
        #expect(try BadInputTests.snapshot(store.path) == before)
        #expect(try Self.version(store.path) == SchemaMigration.latestVersion)
        #expect(try await DatabaseQueue(path: store.path).read { try $0.tableExists("half_done") } == false)
    }

    @Test func twoProcessesOpeningAnOldStoreMigrateItOnce() async throws {
        let store = try Self.oldStore()
        let processes = try (0..<3).map { index in
            try CLI.start(
                ["status", "--json"], db: store.path,
                stdoutPath: store.directory.appendingPathComponent("out-\(index)").path,
                stderrPath: store.directory.appendingPathComponent("err-\(index)").path)
        }
        for (index, process) in processes.enumerated() {
            await process.wait()
            let stderr =
                (try? String(contentsOf: store.directory.appendingPathComponent("err-\(index)"), encoding: .utf8)) ?? ""
            #expect(process.terminationStatus == 0, "process \(index): \(stderr)")
        }
        let versions = try await DatabaseQueue(path: store.path).read { db in
            try Int.fetchAll(db, sql: "SELECT version FROM jobq_schema_migrations ORDER BY version")
        }
        #expect(versions == SchemaMigration.all.map(\.version))
        #expect(try Self.backups(store).count == 1, "one process migrated (and backed up); the others waited")
    }

    /// The fixture is in rollback-journal mode, as any SQLite file jobq did not create may be:
    /// opening switches it to WAL, and while another connection holds its write lock SQLite
    /// refuses that switch at once instead of calling the busy handler. Opening waits for the
    /// lock like any write (the race behind the test above failing about once in 30 rounds).
    @Test func openingWhileAnotherConnectionHoldsTheWriteLockWaitsForIt() async throws {
        let store = try Self.oldStore()
        let holder = try DatabaseQueue(path: store.path)
        let locked = Mutex(false)
        let openStarted = Mutex(false)
        let ended = Mutex(false)
        let endedWhileHeld = Mutex<Bool?>(nil)
        // On threads of their own, and timed there: both block, and a loaded test pool (whose
        // tasks may wait seconds for a thread at a CI run's start) cannot make the lock look
        // released early or held too long.
        let holding = onThread {
            try holder.writeWithoutTransaction { db in
                try db.execute(sql: "BEGIN IMMEDIATE")
                locked.withLock { $0 = true }
                while !openStarted.withLock({ $0 }) { Thread.sleep(forTimeInterval: 0.005) }
                Thread.sleep(forTimeInterval: 0.3)
                endedWhileHeld.withLock { $0 = ended.withLock { $0 } }
                try db.execute(sql: "ROLLBACK")
            }
        }
        try await eventually(.seconds(30), "the other connection to hold the write lock") { locked.withLock { $0 } }
        let opening = onThread {
            defer { ended.withLock { $0 = true } }
            openStarted.withLock { $0 = true }
            _ = try store.open()
        }
        try await holding.value
        try await opening.value
        #expect(endedWhileHeld.withLock { $0 } == false, "the open waited for the lock")
        #expect(try Self.version(store.path) == SchemaMigration.latestVersion)
    }

    @Test func cliMigrateStatusUpDryRunAndTarget() async throws {
        let store = try Self.oldStore()
        let db = store.path
        let status = try await CLI.run(["migrate", "status", "--json"], db: db)
        #expect(status.status == 0, "\(status.stderr)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any])
        #expect(object["currentVersion"] as? Int == 1)
        #expect(object["latestVersion"] as? Int == SchemaMigration.latestVersion)
        #expect(object["pending"] as? [String] == SchemaMigration.all.dropFirst().map(\.name))

        let before = try BadInputTests.snapshot(db)
        let dry = try await CLI.run(["migrate", "up", "--dry-run"], db: db)
        #expect(dry.status == 0)
        #expect(dry.stdout.contains("would apply 0002_data_migrations.sql"))
        #expect(try BadInputTests.snapshot(db) == before)
        #expect(try Self.version(db) == 1)

        #expect(try await CLI.run(["migrate", "up", "--to", "0"], db: db).status == 2)
        #expect(try await CLI.run(["migrate", "up", "--to", "999"], db: db).status == 2)
        #expect(try BadInputTests.snapshot(db) == before)

        let up = try await CLI.run(["migrate", "up", "--no-backup"], db: db)
        #expect(up.status == 0, "\(up.stderr)")
        #expect(up.stdout.contains("applied 0002_data_migrations.sql"))
        #expect(try Self.backups(store).isEmpty)
        #expect(try Self.version(db) == SchemaMigration.latestVersion)
        let again = try await CLI.run(["migrate", "up"], db: db)
        #expect(again.stdout.contains("nothing to do"))
        let text = try await CLI.run(["migrate", "status"], db: db)
        #expect(text.stdout.contains("pending:         none"))
        #expect(text.stdout.contains("notes: version 2 of 3") == false, "the v1 fixture has no data migrators")
    }

    @Test func cliRefusesNewerAndEditedStoresWithExitTwo() async throws {
        let newer = try TemporaryStore()
        _ = try newer.open()
        try await DatabaseQueue(path: newer.path).write { try StoreTests.recordVersion(42, in: $0) }
        let before = try BadInputTests.snapshot(newer.path)
        for arguments in [["status"], ["list"], ["migrate", "status"], ["migrate", "up"], ["enqueue", "sum"]] {
            let result = try await CLI.run(arguments, db: newer.path)
            #expect(result.status == 2, "\(arguments)")
            #expect(
                result.stderr.contains("schema version 42") && result.stderr.contains("upgrade jobq"),
                "\(result.stderr)")
        }
        #expect(try BadInputTests.snapshot(newer.path) == before)

        let edited = try TemporaryStore()
        _ = try edited.open()
        try await DatabaseQueue(path: edited.path).write {
            try $0.execute(sql: "UPDATE jobq_schema_migrations SET checksum = 'abc' WHERE version = 1")
        }
        let editedBefore = try BadInputTests.snapshot(edited.path)
        let result = try await CLI.run(["status"], db: edited.path)
        #expect(result.status == 2)
        #expect(result.stderr.contains("0001_create_jobs.sql"))
        #expect(try BadInputTests.snapshot(edited.path) == editedBefore)
    }
}
