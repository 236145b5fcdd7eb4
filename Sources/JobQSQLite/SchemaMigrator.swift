import Foundation
import GRDB
import JobQCore
import JobQSQL

extension SchemaMigration {
    /// Every migration of the SQLite store this binary knows, in order.
    static let all = numbered(embeddedMigrationFiles)

    static var latestVersion: Int { all.last?.version ?? 0 }

    /// The migration that gave jobq's tables the `jobq_` prefix (`0014_jobq_prefix.sql`).
    static let prefixVersion = 14

    /// The migration's SQL for a store whose tables have the `jobq_` prefix from the start: the
    /// migrations written before the prefix existed, with each table and index name prefixed,
    /// and nothing for the one that renames an older store's tables. Rewritten once per process,
    /// not at each new store.
    var prefixedSQL: String {
        Self.prefixedByVersion[version] ?? rewrittenWithPrefix
    }

    private static let prefixedByVersion = Dictionary(
        all.map { ($0.version, $0.rewrittenWithPrefix) }, uniquingKeysWith: { first, _ in first })

    private var rewrittenWithPrefix: String {
        guard version <= Self.prefixVersion else { return sql }
        guard version < Self.prefixVersion else { return "" }
        return StoreTables.rewrite(sql) { site in
            guard Self.unprefixedNames.contains(String(site.name)) else { return nil }
            let named =
                site.quoted || site.qualifiesColumn
                || site.previousWord.map { Self.wordsBeforeAName.contains($0.uppercased()) } == true
            return named ? StoreTables.prefix + site.name : nil
        }
    }

    /// Words after which the migrations before the prefix name a table or an index. (A bare
    /// name elsewhere is a column: `trees.jobs`, `workers.queues`.)
    private static let wordsBeforeAName: Set<String> = [
        "FROM", "JOIN", "INTO", "UPDATE", "TABLE", "INDEX", "EXISTS", "ON", "REFERENCES", "TO", "BY"
    ]

    /// Every table and index name those migrations wrote, including the tables they rebuilt.
    private static let unprefixedNames: Set<String> = StoreTables.names.union([
        "jobs_v5", "workflow_groups_v6", "dependencies_by_group", "dependencies_by_job", "dependencies_of_job",
        "events_job", "events_workflow", "jobs_batch", "jobs_claim_order", "jobs_due", "jobs_finished", "jobs_group",
        "jobs_lane", "jobs_leases", "jobs_schedule_occurrence", "jobs_unique_hold", "jobs_waiting",
        "queue_starts_window", "schedules_due", "tracking_members_by_member", "tree_nodes_children", "tree_nodes_tree",
        "trees_workflow", "workflow_groups_children", "workflow_groups_workflow", "workflows_state"
    ])
}

/// How a database file holds jobq's tables.
enum StoreLayout {
    /// It holds none (a new file, or an application's own database).
    case none
    /// Made by a jobq before the `jobq_` prefix: bare names, the version in `PRAGMA user_version`.
    case unprefixed
    /// `jobq_` names, the version in `jobq_schema_migrations`.
    case prefixed

    static func of(_ db: Database) throws -> StoreLayout {
        // GRDB caches a connection's schema and does not see another process change it: a
        // process that looked before another one's migration renamed `schema_migrations` would
        // find the old name in its cache and fail on it ("no such table: schema_migrations",
        // seen when three processes opened an old store at once). What the tables are now.
        db.clearSchemaCache()
        if try db.tableExists("jobq_schema_migrations") { return .prefixed }
        return try isUnprefixedStore(db) ? .unprefixed : .none
    }

    /// Whether the file's `schema_migrations` is jobq's: its columns, and jobq's first migration
    /// recorded in it with its checksum. An application's own table of that name is not.
    private static func isUnprefixedStore(_ db: Database) throws -> Bool {
        guard try db.tableExists("schema_migrations"), let first = SchemaMigration.all.first else { return false }
        let columns = Set(try db.columns(in: "schema_migrations").map(\.name))
        guard columns.isSuperset(of: ["version", "name", "checksum", "applied_at"]) else { return false }
        return try String.fetchOne(db, sql: "SELECT checksum FROM schema_migrations WHERE version = 1")
            == first.checksum
    }
}

/// Applies schema migrations to a store, each in its own transaction, recorded with its checksum
/// (in `jobq_schema_migrations`; a store from before the `jobq_` prefix mirrors it in
/// `PRAGMA user_version` until migration 14 renames its tables).
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
        switch try StoreLayout.of(db) {
        case .none: 0
        case .unprefixed: try Int.fetchOne(db, sql: "PRAGMA user_version") ?? 0
        case .prefixed: try Int.fetchOne(db, sql: "SELECT COALESCE(MAX(version), 0) FROM jobq_schema_migrations") ?? 0
        }
    }

    /// The migrations a store records, as rows of its table of them.
    static func appliedRows(_ db: Database) throws -> [Row] {
        switch try StoreLayout.of(db) {
        case .none: []
        case .unprefixed: try Row.fetchAll(db, sql: "SELECT * FROM schema_migrations ORDER BY version")
        case .prefixed: try Row.fetchAll(db, sql: "SELECT * FROM jobq_schema_migrations ORDER BY version")
        }
    }

    /// The store's version and the migrations it lacks, after refusing a newer or edited store.
    @discardableResult
    func check() throws -> (version: Int, pending: [SchemaMigration]) {
        let (version, applied) = try writer.read { db in (try Self.currentVersion(db), try Self.appliedRows(db)) }
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
                // A store made before the prefix takes each migration as it was written, up to
                // the one that renames its tables; a newer one takes them with the prefix.
                let layout = try StoreLayout.of(db)
                do {
                    try db.execute(sql: layout == .unprefixed ? migration.sql : migration.prefixedSQL)
                } catch let error as DatabaseError {
                    throw JobQueueError.storeUnavailable(
                        "schema migration \(migration.name) failed: \(error.message ?? "\(error)"); the store is unchanged at version \(version)"
                    )
                }
                let table =
                    try db.tableExists("jobq_schema_migrations") ? "jobq_schema_migrations" : "schema_migrations"
                try db.execute(
                    sql: "INSERT INTO \(table) (version, name, checksum, applied_at) VALUES (?, ?, ?, ?)",
                    arguments: [migration.version, migration.name, migration.checksum, Date().timeIntervalSince1970])
                // `user_version` is the application's once jobq shares its file; an older store
                // keeps its own there, so that a jobq from before the prefix refuses it as newer.
                if layout == .unprefixed { try db.execute(sql: "PRAGMA user_version = \(migration.version)") }
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
