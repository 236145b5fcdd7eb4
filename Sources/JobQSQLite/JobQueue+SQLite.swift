import Foundation
import JobQCore
import JobQSQL

extension JobQueue {
    /// The SQLite store under this queue, when it is one.
    var sqliteStore: SQLiteStore? { store as? SQLiteStore }

    /// Opens the store at `path`, creating it (readable by the owner only) if it does not exist.
    ///
    /// ```swift
    /// let queue = try JobQueue(path: "jobs.sqlite")
    /// // In production, where `jobq migrate up` runs before the workers start:
    /// let strict = try JobQueue(path: "jobs.sqlite", migrations: .refuseIfPending)
    /// ```
    ///
    /// - Parameters:
    ///   - path: The store's file; created (readable by its owner only) when missing.
    ///   - durability: `.normal` (the default) survives process crashes; `.full` also survives
    ///     power loss, with an fsync per commit.
    ///   - migrations: Whether an older schema is migrated on open (the default) or refused.
    ///   - backupBeforeMigrating: Before migrating a store that holds data, write a consistent
    ///     copy next to it, named `<path>.v<old version>-<UTC time>.backup`.
    /// - Throws: `JobQueueError.storeUnavailable` when the file is not a jobq store, its
    ///   directory is missing or it is read-only; `JobQueueError.incompatibleStore` when
    ///   its schema is newer than this jobq, was edited, or (with `.refuseIfPending`) is older.
    public convenience init(
        path: String, durability: Durability = .normal, migrations: SchemaMigrationPolicy = .applyPending,
        backupBeforeMigrating: Bool = true
    ) throws {
        self.init(
            store: try SQLiteStore(
                path: path, durability: durability, policy: migrations, backup: backupBeforeMigrating))
    }

    /// Opens the store at `path` to read only, changing nothing in the file: no migration, no
    /// switch to WAL mode, no checkpoint; it works for a user who may only read the file. A
    /// store that needs migrations is refused (`JobQueueError.incompatibleStore`), and
    /// every write throws `JobQueueError.storeUnavailable`.
    ///
    /// ```swift
    /// let snapshot = try JobQueue(readingOnly: "/var/lib/app/jobs.sqlite")
    /// print(try await snapshot.status())
    /// ```
    public convenience init(readingOnly path: String) throws {
        self.init(store: try SQLiteStore(path: path, durability: .normal, policy: .refuseIfPending, readOnly: true))
    }

    /// A queue that lives in memory only, for tests and previews. Only pools in this process
    /// can run its jobs, and everything is gone when the last reference goes away.
    public static func inMemory() throws -> JobQueue {
        JobQueue(store: try SQLiteStore(path: nil, durability: .normal))
    }
}
