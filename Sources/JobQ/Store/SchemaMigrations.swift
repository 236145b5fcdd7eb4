import Foundation
import GRDB

/// One numbered SQL file from the package's `Migrations/` folder, compiled into the binary.
struct SchemaMigration: Sendable {
    let version: Int
    let name: String
    let sql: String
    var checksum: String { SHA256.hex(sql) }

    /// Every migration this binary knows, in order. File names are `NNNN_name.sql`.
    static let all: [SchemaMigration] = embeddedMigrationFiles.map { file in
        let stem = file.name.hasSuffix(".sql") ? String(file.name.dropLast(4)) : file.name
        let digits = stem.prefix { $0.isNumber }
        guard let version = Int(digits) else {
            preconditionFailure("migration file \(file.name) must start with its number, e.g. 0002_add_events.sql")
        }
        return SchemaMigration(version: version, name: file.name, sql: file.sql)
    }

    static var latestVersion: Int { all.last?.version ?? 0 }
}

/// Applies the embedded schema migrations to a store, each in its own transaction.
///
/// Every step re-reads the version inside its write transaction, so two processes opening an
/// old store at once migrate it once: the second one waits for the write lock, then sees there
/// is nothing left to do.
enum SchemaMigrator {
    static func currentVersion(_ db: Database) throws -> Int {
        try Int.fetchOne(db, sql: "PRAGMA user_version") ?? 0
    }

    static func migrate(_ writer: any DatabaseWriter) throws {
        let latest = SchemaMigration.latestVersion
        let found = try writer.read { try currentVersion($0) }
        if found > latest { throw newerStoreError(found: found, latest: latest) }
        try verifyChecksums(writer)
        for migration in SchemaMigration.all {
            try writer.write { db in
                let version = try currentVersion(db)
                if version > latest { throw newerStoreError(found: version, latest: latest) }
                guard version < migration.version else { return }
                do {
                    try db.execute(sql: migration.sql)
                } catch let error as DatabaseError {
                    throw JobQueueError.storeUnavailable(
                        "schema migration \(migration.name) failed: \(error.message ?? "\(error)"); the store is unchanged at version \(version)")
                }
                try db.execute(
                    sql: "INSERT INTO schema_migrations (version, name, checksum, applied_at) VALUES (?, ?, ?, ?)",
                    arguments: [migration.version, migration.name, migration.checksum, Date().timeIntervalSince1970])
                try db.execute(sql: "PRAGMA user_version = \(migration.version)")
            }
        }
    }

    /// Refuses a store where an applied migration's text differs from the file this binary
    /// embeds: the store's schema is not what this code expects.
    static func verifyChecksums(_ writer: any DatabaseWriter) throws {
        let applied = try writer.read { db -> [Row] in
            guard try db.tableExists("schema_migrations") else { return [] }
            return try Row.fetchAll(db, sql: "SELECT version, name, checksum FROM schema_migrations")
        }
        let known = Dictionary(uniqueKeysWithValues: SchemaMigration.all.map { ($0.version, $0) })
        for row in applied {
            let version: Int = row["version"]
            guard let migration = known[version] else { continue }
            let checksum: String = row["checksum"]
            if checksum != migration.checksum {
                throw JobQueueError.storeUnavailable(
                    "schema migration \(migration.name) was applied with checksum \(checksum.prefix(12)) but this jobq embeds \(migration.checksum.prefix(12)); "
                        + "the migration file was edited after it shipped. Restore the original file; add schema changes as a new numbered migration")
            }
        }
    }

    static func newerStoreError(found: Int, latest: Int) -> JobQueueError {
        .storeUnavailable(
            "the store is at schema version \(found), newer than this jobq knows (version \(latest)); upgrade jobq to open it")
    }
}
