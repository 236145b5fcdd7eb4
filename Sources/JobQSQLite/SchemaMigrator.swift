import Foundation
import GRDB
import JobQCore

extension SchemaMigration {
    /// Every migration of the SQLite store this binary knows, in order.
    static let all = numbered(embeddedMigrationFiles)

    static var latestVersion: Int { all.last?.version ?? 0 }
}

/// Applies schema migrations to a store, each in its own transaction, recorded with its checksum
/// and mirrored in `PRAGMA user_version`.
///
/// Every step re-reads the version inside its write transaction (`BEGIN IMMEDIATE`), so two
/// processes opening an old store at once migrate it once: a process that finds the version
/// moved since it looked knows another one is migrating, and waits for it to finish rather than
/// apply the remaining steps itself (which would also back the store up twice). If the version
/// stops moving for ``stalledMigrationTimeout`` short of the target (the migrating process
/// died), it takes over. The backup is taken inside the first step's transaction, while the
/// write lock is held, so it is exactly the store as it was before any step.
struct SchemaMigrator {
    let writer: any DatabaseWriter
    let path: String?
    var migrations: [SchemaMigration] = SchemaMigration.all
    /// Called after each step this migrator applied, outside its transaction (tests use it to
    /// let another migrator in between two steps).
    var afterStep: (@Sendable (SchemaMigration) -> Void)?

    var latestVersion: Int { migrations.last?.version ?? 0 }

    static func currentVersion(_ db: Database) throws -> Int {
        try Int.fetchOne(db, sql: "PRAGMA user_version") ?? 0
    }

    /// The store's version and the migrations it lacks, after refusing a newer or edited store.
    @discardableResult
    func check() throws -> (version: Int, pending: [SchemaMigration]) {
        let (version, applied) = try writer.read { db -> (Int, [Row]) in
            let version = try Self.currentVersion(db)
            guard try db.tableExists("schema_migrations") else { return (version, []) }
            return (version, try Row.fetchAll(db, sql: "SELECT version, name, checksum FROM schema_migrations"))
        }
        if version > latestVersion { throw Self.newerStoreError(found: version, latest: latestVersion) }
        let known = Dictionary(uniqueKeysWithValues: migrations.map { ($0.version, $0) })
        for row in applied {
            guard let migration = known[row["version"]] else { continue }
            let checksum: String = row["checksum"]
            if checksum != migration.checksum {
                throw JobQueueError.incompatibleStore(
                    "schema migration \(migration.name) was applied with checksum \(checksum.prefix(12)) but this jobq embeds \(migration.checksum.prefix(12)): "
                        + "the file was edited after it shipped. Restore the original file and add schema changes as a new numbered migration"
                )
            }
        }
        return (version, migrations.filter { $0.version > version })
    }

    /// Applies the pending migrations up to `target` (default: all). Returns the ones this call
    /// applied and the backup it wrote, if any.
    @discardableResult
    func migrate(to target: Int? = nil, backup: Bool) throws -> (applied: [SchemaMigration], backupPath: String?) {
        let (initialVersion, pending) = try check()
        let steps = pending.filter { $0.version <= (target ?? Int.max) }
        guard let goal = steps.last?.version else { return ([], nil) }
        var applied: [SchemaMigration] = []
        var backupPath: String?
        var expected = initialVersion
        for migration in steps {
            let stepped = try writer.write { db -> Bool in
                let version = try Self.currentVersion(db)
                if version > latestVersion { throw Self.newerStoreError(found: version, latest: latestVersion) }
                // Moved since we looked: another process is migrating.
                guard version == expected else { return false }
                // A store this run created holds nothing worth a backup.
                if backup, backupPath == nil, initialVersion > 0, version > 0, let path {
                    backupPath = try Self.writeBackup(of: path, version: version)
                }
                do {
                    try db.execute(sql: migration.sql)
                } catch let error as DatabaseError {
                    throw JobQueueError.storeUnavailable(
                        "schema migration \(migration.name) failed: \(error.message ?? "\(error)"); the store is unchanged at version \(version)"
                    )
                }
                try db.execute(
                    sql: "INSERT INTO schema_migrations (version, name, checksum, applied_at) VALUES (?, ?, ?, ?)",
                    arguments: [migration.version, migration.name, migration.checksum, Date().timeIntervalSince1970])
                try db.execute(sql: "PRAGMA user_version = \(migration.version)")
                return true
            }
            guard stepped else {
                try waitForOtherMigrator(toReach: goal)
                return (applied, backupPath)
            }
            applied.append(migration)
            expected = migration.version
            afterStep?(migration)
        }
        return (applied, backupPath)
    }

    /// How long another process's migration may leave the version unchanged before this
    /// process decides it died and migrates the store itself.
    static let stalledMigrationTimeout: Duration = .seconds(5)

    /// Waits until the store reaches `goal`, while another process migrates it; takes over when
    /// that process stops making progress.
    private func waitForOtherMigrator(toReach goal: Int) throws {
        var lastVersion = -1
        var lastProgress = ContinuousClock.now
        while true {
            let version = try writer.read { db in try Self.currentVersion(db) }
            if version >= goal { return }
            if version != lastVersion {
                lastVersion = version
                lastProgress = .now
            } else if ContinuousClock.now - lastProgress > Self.stalledMigrationTimeout {
                try migrate(to: goal, backup: false)
                return
            }
            Thread.sleep(forTimeInterval: 0.02)
        }
    }

    /// Copies the store with SQLite's online backup into `<path>.v<version>-<UTC time>.backup`,
    /// readable by the owner only. Called while the write lock is held, through a separate
    /// read-only connection that sees the last committed state.
    static func writeBackup(of path: String, version: Int) throws -> String {
        // 2026-11-21T17:00:00Z -> 20261121T170000Z: sortable and safe in a file name.
        let stamp = Date().formatted(Date.ISO8601FormatStyle()).filter { $0 != "-" && $0 != ":" }
        var backupPath = "\(path).v\(version)-\(stamp).backup"
        var suffix = 1
        while FileManager.default.fileExists(atPath: backupPath) {
            suffix += 1
            backupPath = "\(path).v\(version)-\(stamp)-\(suffix).backup"
        }
        let fd = open(backupPath, O_CREAT | O_EXCL | O_WRONLY, 0o600)
        guard fd >= 0 else {
            throw JobQueueError.storeUnavailable(
                "cannot write the backup \(backupPath) before migrating: \(String(cString: strerror(errno))); free space or pass --no-backup"
            )
        }
        close(fd)
        do {
            var config = Configuration()
            config.readonly = true
            let source = try DatabaseQueue(path: path, configuration: config)
            let destination = try DatabaseQueue(path: backupPath)
            try source.backup(to: destination)
            try destination.close()
            try source.close()
        } catch {
            try? FileManager.default.removeItem(atPath: backupPath)
            throw JobQueueError.storeUnavailable(
                "cannot back up \(path) before migrating: \(error); free space or pass --no-backup")
        }
        return backupPath
    }

    static func newerStoreError(found: Int, latest: Int) -> JobQueueError {
        .incompatibleStore(
            "the store is at schema version \(found), newer than this jobq knows (version \(latest)); upgrade jobq to open it"
        )
    }
}
