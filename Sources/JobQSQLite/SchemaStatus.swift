import Foundation
import GRDB
import JobQCore
import JobQSQL

extension JobQueue {
    /// Reads a store's schema version, applied and pending migrations and data migrators,
    /// changing nothing (a missing store reads as version 0 with everything pending).
    ///
    /// ```swift
    /// let status = try JobQueue.schemaStatus(path: "jobs.sqlite")
    /// if !status.pending.isEmpty { print("run `jobq migrate up`") }
    /// ```
    ///
    /// - Throws: `JobQueueError.incompatibleStore` for a store newer than this jobq or
    ///   with an edited migration.
    public static func schemaStatus(path: String) throws -> SchemaStatus {
        guard FileManager.default.fileExists(atPath: path) else {
            return SchemaStatus(
                path: path, currentVersion: 0, latestVersion: SchemaMigration.latestVersion, applied: [],
                pending: SchemaMigration.all.map(\.name), dataMigrators: [])
        }
        do {
            return try readStatus(path: path)
        } catch let error as DatabaseError {
            throw JobQueueError.storeUnavailable(SQLiteStore.explain(error, path: path))
        }
    }

    private static func readStatus(path: String) throws -> SchemaStatus {
        let reader = try openReadOnly(path)
        let (version, pending) = try SchemaMigrator(writer: reader, path: path).check()
        return try reader.read { db in
            let applied = try SchemaMigrator.appliedRows(db).map { row in
                AppliedSchemaMigration(
                    version: row["version"], name: row["name"], checksum: row["checksum"],
                    appliedAt: Date(timeIntervalSince1970: row["applied_at"]))
            }
            return SchemaStatus(
                path: path, currentVersion: version, latestVersion: SchemaMigration.latestVersion, applied: applied,
                pending: pending.map(\.name),
                // A store before the prefix is read as it is, before `migrate up` renames it.
                dataMigrators: try db.tableExists("jobq_data_migrations")
                    ? StoreSQL.dataMigrators(SQLiteTransaction(db: db)) : [])
        }
    }

    /// Migrates a store's schema up to `target` (default: the latest), each migration in its own
    /// transaction, after a backup when the store holds data. With `dryRun`, reports what would
    /// run and changes nothing.
    ///
    /// ```swift
    /// let report = try JobQueue.migrateSchema(path: "jobs.sqlite")
    /// print(report.migrations, report.backupPath ?? "no backup")
    /// ```
    @discardableResult
    public static func migrateSchema(path: String, to target: Int? = nil, backup: Bool = true, dryRun: Bool = false)
        throws -> SchemaMigrationReport
    {
        let status = try schemaStatus(path: path)
        let goal = target ?? status.latestVersion
        guard goal <= status.latestVersion else {
            throw JobQueueError.invalidInput(
                "--to \(goal): this jobq knows schema versions up to \(status.latestVersion)")
        }
        guard goal >= status.currentVersion else {
            throw JobQueueError.invalidInput(
                "--to \(goal): the store is already at version \(status.currentVersion); jobq does not migrate down (restore a backup instead)"
            )
        }
        let planned = SchemaMigration.all.filter { $0.version > status.currentVersion && $0.version <= goal }
        var report = SchemaMigrationReport(
            fromVersion: status.currentVersion, toVersion: goal, migrations: planned.map(\.name), backupPath: nil,
            dryRun: dryRun)
        if dryRun || planned.isEmpty {
            if planned.isEmpty { report.toVersion = status.currentVersion }
            return report
        }
        let store = try SQLiteStore(path: path, durability: .normal, policy: nil)
        let (applied, backupPath) = try SchemaMigrator(writer: store.writer, path: path).migrate(
            to: goal, backup: backup)
        report.migrations = applied.map(\.name)
        report.backupPath = backupPath
        return report
    }

    private static func openReadOnly(_ path: String) throws -> DatabaseQueue {
        var config = Configuration()
        config.readonly = true
        config.busyMode = .timeout(SQLiteStore.busyTimeout)
        do {
            return try DatabaseQueue(path: path, configuration: config)
        } catch let error as DatabaseError {
            throw JobQueueError.storeUnavailable(SQLiteStore.explain(error, path: path))
        }
    }
}
