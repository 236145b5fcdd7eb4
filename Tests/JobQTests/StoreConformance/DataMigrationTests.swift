import Foundation
import GRDB
import Synchronization
import Testing

@testable import JobQCore
@testable import JobQSQL
@testable import JobQSQLite

/// A migrator whose every call is logged, whose steps can be told to fail, and whose step 3 has
/// nothing to do.
struct Notes: DataMigrator {
    static let name = "notes"
    static var targetVersion: Int { 4 }
    let log: RunLog
    var failAt: Int? = nil

    func initialize(_ context: DataMigrationContext) async throws { log.append("initialize \(context.version)") }

    func needsMigration(to version: Int, context: DataMigrationContext) async throws -> Bool {
        version != 3
    }

    func migrate(to version: Int, context: DataMigrationContext) async throws {
        if version == failAt { throw ExecutorFailure("step \(version) broke") }
        log.append("migrate \(version)")
    }
}

/// The same data, at an older target: what an earlier release of the program shipped.
struct NotesV1: DataMigrator {
    static let name = "notes"
    static let targetVersion = 1
    let log: RunLog
    func initialize(_ context: DataMigrationContext) async throws { log.append("initialize \(context.version)") }
    func migrate(to version: Int, context: DataMigrationContext) async throws { log.append("v1 migrate \(version)") }
}

/// Keeps its own table in the jobq store and changes it atomically with each step's record,
/// through the store-neutral `context.write` (the same code on SQLite and PostgreSQL).
struct Tags: DataMigrator {
    static let name = "tags"
    static let targetVersion = 2
    var failInsideWrite = false

    func initialize(_ context: DataMigrationContext) async throws {
        try await context.write { db in
            try db.execute("CREATE TABLE app_tags (name TEXT)")
            try db.execute("INSERT INTO app_tags (name) VALUES (?), (?)", ["urgent", "later"])
        }
    }

    func migrate(to version: Int, context: DataMigrationContext) async throws {
        let fail = failInsideWrite
        try await context.write { db in
            try db.execute("ALTER TABLE app_tags ADD COLUMN colour TEXT")
            let changed = try db.execute("UPDATE app_tags SET colour = ? WHERE name = ?", ["red", "urgent"])
            let rows = try db.rows("SELECT name, colour FROM app_tags WHERE colour IS NOT NULL")
            guard changed == 1, rows.count == 1, rows[0]["name"]?.string == "urgent", rows[0]["colour"] == "red" else {
                throw ExecutorFailure("the step read back \(changed) changed, \(rows)")
            }
            if fail { throw ExecutorFailure("half-way") }
        }
    }
}

@Suite("Data migrations")
struct DataMigrationTests {
    @Test(arguments: TestStore.all) func freshInstallInitializesOnceAndRecordsTheTarget(store: TestStore) async throws {
        let queue = try await store.open()
        let log = RunLog()
        let report = try await queue.runDataMigration(Notes(log: log))
        #expect(report.initialized)
        #expect(report.fromVersion == nil)
        #expect(report.toVersion == 4)
        #expect(report.migrated.isEmpty)
        let again = try await queue.runDataMigration(Notes(log: log))
        #expect(!again.initialized && again.migrated.isEmpty && again.fromVersion == 4)
        #expect(log.all == ["initialize 4"])
        #expect(try await queue.dataMigrators().map(\.version) == [4])
    }

    @Test(arguments: TestStore.all) func stepsRunInOrderAndAStepWithNothingToDoIsRecordedWithoutRunning(
        store: TestStore
    ) async throws {
        let queue = try await store.open()
        let log = RunLog()
        try await queue.runDataMigration(NotesV1(log: log))
        let report = try await queue.runDataMigration(Notes(log: log))
        #expect(report.fromVersion == 1)
        #expect(report.migrated == [2, 4])
        #expect(report.skipped == [3])
        #expect(log.all == ["initialize 1", "migrate 2", "migrate 4"])
        let steps = try await queue.storedRows(
            "SELECT version, outcome FROM jobq_data_migration_steps WHERE name = 'notes' ORDER BY version"
        )
        .map { "\($0["version"] as Int) \($0["outcome"] as String)" }
        #expect(steps == ["1 initialized", "2 migrated", "3 skipped", "4 migrated"])
    }

    @Test(arguments: TestStore.all) func aFailingStepStopsAtTheLastGoodStepAndTheNextRunResumes(store: TestStore)
        async throws
    {
        let queue = try await store.open()
        let log = RunLog()
        try await queue.runDataMigration(NotesV1(log: log))
        await #expect(throws: ExecutorFailure.self) { try await queue.runDataMigration(Notes(log: log, failAt: 4)) }
        #expect(try await queue.dataMigrators().first?.version == 3)
        let resumed = try await queue.runDataMigration(Notes(log: log))
        #expect(resumed.fromVersion == 3)
        #expect(resumed.migrated == [4])
        #expect(log.all == ["initialize 1", "migrate 2", "migrate 4"])
    }

    @Test(arguments: TestStore.all) func aStepsStoreChangesCommitWithItsRecordOrNotAtAll(store: TestStore) async throws
    {
        let queue = try await store.open()
        struct TagsV1: DataMigrator {
            static let name = "tags"
            static let targetVersion = 1
            func initialize(_ context: DataMigrationContext) async throws { try await Tags().initialize(context) }
            func migrate(to version: Int, context: DataMigrationContext) async throws {}
        }
        try await queue.runDataMigration(TagsV1())
        await #expect(throws: ExecutorFailure.self) { try await queue.runDataMigration(Tags(failInsideWrite: true)) }
        let before = try await queue.storedRows("SELECT * FROM app_tags ORDER BY name")
        #expect(
            before.map(\.names) == [["name"], ["name"]], "the failed step's ALTER TABLE was rolled back with its record"
        )
        #expect(try await queue.dataMigrators().first?.version == 1)
        try await queue.runDataMigration(Tags())
        let after = try await queue.storedRows("SELECT name, colour FROM app_tags ORDER BY name")
        #expect(
            after.map { "\($0["name"] as String)=\(($0["colour"] as String?) ?? "-")" } == ["later=-", "urgent=red"])
        #expect(try await queue.dataMigrators().first?.version == 2)
    }

    /// `context.writeSQLite` hands over GRDB's `Database` on SQLite, and on another store
    /// refuses before anything is changed or recorded.
    @Test(arguments: TestStore.all) func writeSQLiteGivesGRDBOnSQLiteAndARefusalElsewhere(store: TestStore) async throws
    {
        let queue = try await store.open()
        struct Pins: DataMigrator {
            static let name = "pins"
            static let targetVersion = 1
            func initialize(_ context: DataMigrationContext) async throws {
                try await context.writeSQLite { db in
                    try db.create(table: "app_pins") { table in table.column("note", .text) }
                }
            }
            func migrate(to version: Int, context: DataMigrationContext) async throws {}
        }
        if queue.sqliteStore != nil {
            try await queue.runDataMigration(Pins())
            #expect(
                try await queue.sqliteStore!.readDatabase { db in try db.columns(in: "app_pins").map(\.name) } == [
                    "note"
                ])
            #expect(try await queue.dataMigrators().map(\.name) == ["pins"])
        } else {
            let error = await #expect(throws: JobQueueError.self) { try await queue.runDataMigration(Pins()) }
            #expect(error?.description.contains("use context.write") == true)
            #expect(try await queue.dataMigrators().isEmpty, "nothing recorded")
        }
    }

    @Test(arguments: TestStore.all) func aDataMigratorNewerThanTheCodeIsRefused(store: TestStore) async throws {
        let queue = try await store.open()
        try await queue.runDataMigration(Notes(log: RunLog()))
        await #expect(throws: JobQueueError.self) { try await queue.runDataMigration(NotesV1(log: RunLog())) }
    }

    @Test(arguments: TestStore.all) func backgroundRunIsAChainOfJobsThatRunInOrder(store: TestStore) async throws {
        let queue = try await store.open()
        let log = RunLog()
        try await queue.runDataMigration(NotesV1(log: log))
        let report = try await queue.runDataMigration(Notes(log: log), waitUntilDone: false)
        let first = try #require(report.jobID)
        #expect(report.toVersion == 1, "nothing ran yet")
        let duplicate = try await queue.runDataMigration(Notes(log: log), waitUntilDone: false)
        #expect(duplicate.jobID == first, "a second run joins the chain in progress")

        try await work(queue, executors: [], concurrency: 4, migrators: [Notes(log: log)], options: quickOptions())
        #expect(log.all == ["initialize 1", "migrate 2", "migrate 4"])
        #expect(try await queue.dataMigrators().first?.version == 4)
        let jobs = try await queue.jobs()
        #expect(jobs.allSatisfy { $0.state == .succeeded })
        #expect(jobs.last?.progress == 1)
        #expect(jobs.last?.progressMessage == "notes: step 4 of 4 migrated")
        #expect(
            try await queue.events(after: 0, filter: EventFilter(kinds: [.progress])).count >= 3,
            "each step reports progress")
        #expect(
            jobs.map(\.resultJSON) == [
                #"{"migrator":"notes","step":2,"outcome":"migrated"}"#,
                #"{"migrator":"notes","step":3,"outcome":"skipped"}"#,
                #"{"migrator":"notes","step":4,"outcome":"migrated"}"#
            ])
    }

    @Test(arguments: TestStore.all) func backgroundStepWithoutItsMigratorFailsClearly(store: TestStore) async throws {
        let queue = try await store.open()
        try await queue.runDataMigration(NotesV1(log: RunLog()))
        let report = try await queue.runDataMigration(Notes(log: RunLog()), waitUntilDone: false)
        try await work(queue, executors: [], migrators: [Tags()], options: quickOptions())
        let job = try #require(try await queue.job(report.jobID!))
        #expect(job.state == .dead)
        #expect(job.error?.contains("no data migrator named 'notes'") == true)
    }

}
