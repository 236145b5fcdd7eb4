import Foundation

/// A migration recorded in a store.
public struct AppliedSchemaMigration: Sendable, Hashable, Codable {
    public var version: Int
    public var name: String
    public var checksum: String
    public var appliedAt: Date

    package init(version: Int, name: String, checksum: String, appliedAt: Date) {
        self.version = version
        self.name = name
        self.checksum = checksum
        self.appliedAt = appliedAt
    }
}

/// Where a store's schema stands relative to this jobq, and its users' data migrators.
public struct SchemaStatus: Sendable, Hashable, Codable {
    public var path: String
    /// The store's schema version (0: no store yet).
    public var currentVersion: Int
    /// The newest version this jobq knows.
    public var latestVersion: Int
    public var applied: [AppliedSchemaMigration]
    /// File names of the migrations the store lacks, in the order they would run.
    public var pending: [String]
    public var dataMigrators: [DataMigratorStatus]

    package init(
        path: String, currentVersion: Int, latestVersion: Int, applied: [AppliedSchemaMigration], pending: [String],
        dataMigrators: [DataMigratorStatus]
    ) {
        self.path = path
        self.currentVersion = currentVersion
        self.latestVersion = latestVersion
        self.applied = applied
        self.pending = pending
        self.dataMigrators = dataMigrators
    }
}

/// What `JobQueue.migrateSchema(path:to:backup:dryRun:)` (the SQLite store's) did, or would do.
public struct SchemaMigrationReport: Sendable, Hashable, Codable {
    public var fromVersion: Int
    public var toVersion: Int
    /// File names applied (or, for a dry run, that would be applied), in order.
    public var migrations: [String]
    public var backupPath: String?
    public var dryRun: Bool

    package init(fromVersion: Int, toVersion: Int, migrations: [String], backupPath: String?, dryRun: Bool) {
        self.fromVersion = fromVersion
        self.toVersion = toVersion
        self.migrations = migrations
        self.backupPath = backupPath
        self.dryRun = dryRun
    }
}
