import Foundation
import GRDB
import GRDBSQLite
import JobQCore
import JobQSQL

/// jobq's writes in a transaction the application holds: its own GRDB connection to the store's
/// file, inside its `write { db in ... }`. The statements are jobq's own, run on the
/// application's connection, so they commit or roll back with the application's rows.
extension SQLiteStore {
    /// Runs `body` on the application's transaction `db`, inside a savepoint: jobq's writes are
    /// all there or none, even when the application catches jobq's error and commits its own.
    func inCallersTransaction<T>(_ db: Database, _ body: (SQLiteTransaction) throws -> T) throws -> T {
        guard let path else {
            throw JobQueueError.invalidState(
                "an in-memory store cannot share an application's transaction; open the store on the application's file"
            )
        }
        guard db.isInsideTransaction else {
            throw JobQueueError.invalidState(
                "enqueueing in the application's transaction needs one: call it inside `dbPool.write { db in ... }` "
                    + "(not writeWithoutTransaction)")
        }
        let theirs = String(cString: sqlite3_db_filename(db.sqliteConnection, "main"))
        guard callersFilesSeen.withLock({ $0.contains(theirs) }) || Self.sameFile(theirs, path) else {
            throw JobQueueError.invalidInput(
                "the application's connection is to \(theirs.isEmpty ? "an in-memory database" : theirs), not to the store at \(path): "
                    + "open the JobQueue on the application's database file so that both commit together")
        }
        callersFilesSeen.withLock { _ = $0.insert(theirs) }
        do {
            try checkSchemaOnce(db)
            var result: T?
            try db.inSavepoint {
                result = try SQLiteTransaction(db: db).writing(body)
                return .commit
            }
            return result!
        } catch let error as DatabaseError {
            throw JobQueueError.storeUnavailable(Self.explain(error, path: path))
        }
    }

    /// What jobq's own writes do after they commit, for a write the application committed:
    /// other processes' workers and this process's followers are told.
    func callerCommitted() {
        announceCommit()
        commitObservers.callAll()
    }

    /// The application's connection may have opened the file before jobq migrated it, or
    /// another jobq may have left it behind: checked once per store, in the application's
    /// transaction, as opening a store checks it.
    private func checkSchemaOnce(_ db: Database) throws {
        guard !schemaCheckedForCallers.load(ordering: .relaxed) else { return }
        let version = try SchemaMigrator.currentVersion(db)
        guard version == SchemaMigration.latestVersion else {
            if version > SchemaMigration.latestVersion {
                throw SchemaMigrator.newerStoreError(found: version, latest: SchemaMigration.latestVersion)
            }
            throw Self.pendingError(
                version: version, pending: SchemaMigration.all.filter { $0.version > version },
                latest: SchemaMigration.latestVersion)
        }
        schemaCheckedForCallers.store(true, ordering: .relaxed)
    }

    /// Whether two paths name one file (symbolic links and relative paths resolved).
    static func sameFile(_ a: String, _ b: String) -> Bool {
        func resolved(_ path: String) -> String? {
            guard let real = realpath(path, nil) else { return nil }
            defer { free(real) }
            return String(cString: real)
        }
        guard let first = resolved(a), let second = resolved(b) else { return false }
        return first == second
    }
}
