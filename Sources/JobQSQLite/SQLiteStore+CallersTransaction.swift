import Foundation
import GRDB
import GRDBSQLite
import JobQCore
import JobQSQL

/// jobq's writes in a transaction the application holds: its own GRDB connection to the store's
/// file, inside its `write { db in ... }`. The statements are jobq's own, run on the
/// application's connection, so they commit or roll back with the application's rows.
extension SQLiteStore {
    /// Runs `body` on the application's transaction `db`: jobq's writes are all there or none,
    /// even when the application catches jobq's error and commits its own. `atomic`: `body` is
    /// one statement (a self-contained job, whose `enqueued` event is in its row), which SQLite
    /// undoes whole when it fails, so no savepoint is needed; otherwise it runs inside one.
    func inCallersTransaction<T>(_ db: Database, atomic: Bool = false, _ body: (SQLiteTransaction) throws -> T)
        throws -> T
    {
        try checkCallersConnection(db)
        do {
            try checkSchemaOnce(db)
            if atomic { return try SQLiteTransaction(db: db).writing(body) }
            // jobq's own statements, cached on the application's connection: GRDB's
            // `inSavepoint` parsed its two statements anew on every call.
            try db.cachedStatement(sql: "SAVEPOINT jobq_write").execute()
            do {
                let result = try SQLiteTransaction(db: db).writing(body)
                try db.cachedStatement(sql: "RELEASE SAVEPOINT jobq_write").execute()
                return result
            } catch {
                try? db.execute(sql: "ROLLBACK TO SAVEPOINT jobq_write")
                try? db.execute(sql: "RELEASE SAVEPOINT jobq_write")
                throw error
            }
        } catch let error as DatabaseError {
            throw JobQueueError.storeUnavailable(Self.explain(error, path: path))
        }
    }

    /// Refuses a connection outside a write transaction or to another file than the store's.
    private func checkCallersConnection(_ db: Database) throws {
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
        guard let name = sqlite3_db_filename(db.sqliteConnection, "main") else {
            throw JobQueueError.invalidInput(
                "the application's connection has no main database: open the JobQueue on the application's database file"
            )
        }
        // Most calls come from connections already checked: no String made for them.
        if callersFilesSeen.withLock({ seen in seen.contains { $0.withCString { strcmp($0, name) == 0 } } }) { return }
        let theirs = String(cString: name)
        guard Self.sameFile(theirs, path) else {
            throw JobQueueError.invalidInput(
                "the application's connection is to \(theirs.isEmpty ? "an in-memory database" : theirs), not to the store at \(path): "
                    + "open the JobQueue on the application's database file so that both commit together")
        }
        callersFilesSeen.withLock { _ = $0.insert(theirs) }
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
