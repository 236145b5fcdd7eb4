import Foundation
import GRDB
import GRDBSQLite
import JobQCore
import JobQSQL
import Synchronization

/// The SQLite store: GRDB's transactions on one file, for the state changes every ``SQLStore``
/// shares (`StoreSQL`), and what only SQLite has (the schema migrator, data migrations' GRDB
/// access, wake-ups from the file's writes). Times are Unix seconds (REAL).
final class SQLiteStore: SQLStore {
    let writer: any DatabaseWriter
    let path: String?

    func indexReference(_ name: String) -> String { name }
    /// Called after every committed write of this process, e.g. to wake event subscribers.
    let commitObservers = Callbacks()
    /// Whether the schema was found current in an application's transaction (checked once).
    let schemaCheckedForCallers = Atomic<Bool>(false)
    /// The file names applications' connections reported that were found to be the store's file:
    /// resolving a path costs a system call per component, on every enqueue otherwise.
    let callersFilesSeen = Mutex<Set<String>>([])
    /// Write transactions of this process started and not yet finished (see ``write(_:)``).
    private let writesUnderWay = Atomic<Int>(0)
    /// The file other processes' watchers hear commits from (see ``announceCommit()``).
    private let walPath: String?
    /// Checkpoints the WAL off the commit path (a store on a file).
    private let checkpointer: WALCheckpointer?

    /// Seconds a connection waits for another process's write lock before reporting busy.
    static let busyTimeout: TimeInterval = 10

    /// Opens (creating if needed) the store at `path`, or an in-memory store when `path` is nil,
    /// and applies pending schema migrations (or refuses, by `policy`).
    /// With `policy` nil, the schema is left as found (for `jobq migrate up`, which migrates
    /// step by step itself).
    ///
    /// With `readOnly`, the file is opened as it is, on a read-only connection: nothing is
    /// created, migrated, switched to WAL or checkpointed, so a user who may only read the
    /// file can, and its bytes stay as they were; pending migrations are refused, and every
    /// write fails.
    init(
        path: String?, durability: Durability, policy: SchemaMigrationPolicy? = .applyPending, backup: Bool = true,
        readOnly: Bool = false
    ) throws {
        self.path = path
        walPath = path.map { $0 + "-wal" }
        checkpointer = readOnly ? nil : path.map { WALCheckpointer(path: $0) }
        var config = Configuration()
        config.busyMode = .timeout(Self.busyTimeout)
        config.label = "jobq"
        let synchronous = durability == .full ? "FULL" : "NORMAL"
        let checkpointer = self.checkpointer
        config.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = \(synchronous)")
            Self.addFunctions(db)
            // Every connection (only the writer ever commits). The pool's configuration keeps
            // this closure, and so the checkpointer, alive as long as any of its connections.
            if let checkpointer, let connection = db.sqliteConnection { checkpointer.install(on: connection) }
        }
        do {
            if let path, readOnly {
                guard FileManager.default.fileExists(atPath: path) else {
                    throw JobQueueError.storeUnavailable("there is no store at \(path) to read")
                }
                var readOnlyConfig = Configuration()
                readOnlyConfig.readonly = true
                readOnlyConfig.busyMode = .timeout(Self.busyTimeout)
                readOnlyConfig.label = "jobq"
                readOnlyConfig.prepareDatabase { db in Self.addFunctions(db) }
                writer = try DatabaseQueue(path: path, configuration: readOnlyConfig)
                try Self.refuseIfPending(SchemaMigrator(writer: writer, path: path))
                return
            }
            if let path {
                if policy == .refuseIfPending, !FileManager.default.fileExists(atPath: path) {
                    throw JobQueueError.incompatibleStore(
                        "there is no store at \(path); create it with `jobq migrate up`")
                }
                if policy == .refuseIfPending {
                    // Refusing must leave the file untouched: checked on a read-only connection
                    // before the pool opens (which would switch an old store to WAL mode).
                    var probeConfig = Configuration()
                    probeConfig.readonly = true
                    probeConfig.busyMode = .timeout(Self.busyTimeout)
                    let probe = try DatabaseQueue(path: path, configuration: probeConfig)
                    defer { try? probe.close() }
                    try Self.refuseIfPending(SchemaMigrator(writer: probe, path: path))
                }
                try Self.createPrivately(path)
                writer = try Self.openPool(path, config)
            } else {
                let memory = try DatabaseQueue(configuration: config)
                if policy == .applyPending { try InMemoryTemplate.copy(to: memory) }
                writer = memory
            }
            let migrator = SchemaMigrator(writer: writer, path: path)
            switch policy {
            case .applyPending:
                try migrator.migrate(backup: backup)
            case nil:
                try migrator.check()
            case .refuseIfPending:
                try Self.refuseIfPending(migrator)
            }
        } catch let error as JobQueueError {
            throw error
        } catch let error as DatabaseError {
            throw JobQueueError.storeUnavailable(Self.explain(error, path: path))
        }
    }

    deinit {
        checkpointer?.close()
    }

    private static func refuseIfPending(_ migrator: SchemaMigrator) throws {
        let (version, pending) = try migrator.check()
        if !pending.isEmpty { throw pendingError(version: version, pending: pending, latest: migrator.latestVersion) }
    }

    static func pendingError(version: Int, pending: [SchemaMigration], latest: Int) -> JobQueueError {
        .incompatibleStore(
            "the store is at schema version \(version) and needs \(pending.count) migration(s) to reach \(latest) ("
                + pending.map(\.name).joined(separator: ", ") + "); run `jobq migrate up` first")
    }

    /// Opens the pool, waiting out the busy errors SQLite returns at once, without its busy
    /// handler, when processes open one file together: switching a store in rollback-journal
    /// mode to WAL needs a lock that two openers holding shared locks would otherwise deadlock
    /// on, so SQLite fails one of them instead of waiting. Three `jobq status` started together
    /// on such a file (a database made by another tool, the v1 test fixture) failed about once in
    /// 30 rounds under load, saying "stayed locked for 10s" after no wait at all.
    private static func openPool(_ path: String, _ config: Configuration) throws -> DatabasePool {
        let deadline = ContinuousClock.now + .seconds(busyTimeout)
        while true {
            do {
                return try DatabasePool(path: path, configuration: config)
            } catch let error as DatabaseError where error.resultCode == .SQLITE_BUSY && ContinuousClock.now < deadline
            {
                Thread.sleep(forTimeInterval: .random(in: 0.002...0.02))
            }
        }
    }

    /// Creates the store file readable by its owner only, before SQLite creates it with the
    /// process's umask. SQLite gives the -wal and -shm files the same permissions.
    private static func createPrivately(_ path: String) throws {
        let directory = (path as NSString).deletingLastPathComponent
        if !directory.isEmpty, !FileManager.default.fileExists(atPath: directory) {
            throw JobQueueError.storeUnavailable(
                "cannot open store \(path): directory \(directory) does not exist; create it or pass another --db path")
        }
        guard !FileManager.default.fileExists(atPath: path) else { return }
        let fd = open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0o600)
        if fd >= 0 {
            close(fd)
        } else if errno != EEXIST {
            let reason = String(cString: strerror(errno))
            throw JobQueueError.storeUnavailable("cannot create store \(path): \(reason)")
        }
    }

    static func explain(_ error: DatabaseError, path: String?) -> String {
        let location = path ?? "in-memory store"
        switch error.resultCode {
        case .SQLITE_NOTADB:
            return "\(location) is not a jobq store (not an SQLite database); pass the right --db path"
        case .SQLITE_CORRUPT:
            return "\(location) is corrupted (\(error.message ?? "")); restore it from a backup"
        case .SQLITE_READONLY, .SQLITE_PERM, .SQLITE_CANTOPEN:
            return
                "cannot open \(location) for writing: \(error.message ?? "\(error)"); check the file and directory permissions"
        case .SQLITE_FULL:
            return "the disk holding \(location) is full; free space and retry"
        case .SQLITE_BUSY:
            return "\(location) stayed locked by another process for \(Int(busyTimeout))s; retry"
        default:
            return "store \(location): \(error.message ?? "\(error)")" + refusal(error.resultCode)
        }
    }

    /// SQLite's refusals of the data itself (a constraint or trigger, a value too big or of the
    /// wrong type), said with the SQLSTATE class PostgreSQL gives the same refusal, so that one
    /// rule (``StoreErrorKind``) knows them as permanent on both stores: the same write is
    /// refused again however often it is tried, so the one job it concerns is ended or skipped.
    /// Other codes (busy, locked, I/O, full, and SQLITE_ERROR, which also covers a schema that
    /// another process is migrating) may pass, and say nothing.
    private static func refusal(_ code: ResultCode) -> String {
        switch code.primaryResultCode {
        case .SQLITE_CONSTRAINT: " (SQLSTATE 23000)"
        case .SQLITE_TOOBIG, .SQLITE_MISMATCH, .SQLITE_RANGE: " (SQLSTATE 22000)"
        default: ""
        }
    }

    /// Runs a write transaction, mapping SQLite errors to clear `JobQueueError`s.
    ///
    /// A `.short` transaction, when no other write of this process is under way and no other
    /// process holds the write lock, runs right here on the calling thread: no hand-off to GRDB's
    /// writer queue and back, which is most of its cost (a single enqueue, say). Otherwise it
    /// queues through GRDB's callback API and waits there (up to the busy timeout), so that
    /// neither a busy pool nor another process's long transaction parks the caller's thread.
    /// Either way the caller's cancellation is not looked at, so a cancelled caller (a worker
    /// shutting down) still records what it must record, e.g. a released lease.
    /// A commit with an `audience` is announced to other processes' watchers
    /// (``announceCommit()``); one for nobody (a claim without starts, a lease renewal, a
    /// heartbeat) wakes no other process.
    /// SQLite has one writer at a time: `lock` changes nothing here.
    func write<T: Sendable>(
        _ length: TransactionLength, audience: CommitAudience, lock: WriteLock,
        _ body: @escaping @Sendable (SQLiteTransaction) throws -> T
    ) async throws -> T {
        try await writeDatabase(length, announced: audience != .nobody) { db in
            try SQLiteTransaction(db: db).writing(body)
        }
    }

    func read<T: Sendable>(_ length: TransactionLength, _ body: @escaping @Sendable (SQLiteTransaction) throws -> T)
        async throws -> T
    {
        try await readDatabase(length) { db in try body(SQLiteTransaction(db: db)) }
    }

    static func schemaVersion(_ db: SQLiteTransaction) throws -> Int { try SchemaMigrator.currentVersion(db.db) }

    /// ``write(_:_:)`` with GRDB's `Database`, for what only SQLite has (a data migration's
    /// `context.write`, the schema).
    func writeDatabase<T: Sendable>(
        _ length: TransactionLength = .long, announced: Bool = true, _ body: @escaping @Sendable (Database) throws -> T
    ) async throws -> T {
        let path = self.path
        let alone = writesUnderWay.add(1, ordering: .acquiringAndReleasing).oldValue == 0 && length == .short
        defer { writesUnderWay.subtract(1, ordering: .acquiringAndReleasing) }
        let result: T
        let here: T?
        do { here = alone ? try writeHereUnlessLocked(body) : nil } catch { throw Self.mapped(error, path: path) }
        if let here {
            result = here
        } else {
            result = try await withCheckedThrowingContinuation { continuation in
                writer.asyncWrite(body) { _, result in
                    continuation.resume(with: result.mapError { Self.mapped($0, path: path) })
                }
            }
        }
        if announced { announceCommit() }
        commitObservers.callAll()
        return result
    }

    /// Tells other processes' watchers (``FileTouchNotifier``) that a commit is visible: sets
    /// the WAL's times to now, which the OS reports as one attribute change. SQLite's own WAL
    /// writes are reported before the commit is published, and one per page, so watchers
    /// listen for this instead: one report per commit, after it. By path, not by a descriptor
    /// of our own: closing a descriptor of a file drops the process's POSIX locks on it.
    func announceCommit() {
        guard let walPath else { return }
        _ = utimensat(AT_FDCWD, walPath, nil, 0)
    }

    /// The write transaction on the calling thread, if the write lock can be had at once;
    /// nil when another process holds it (the caller then waits off this thread).
    private func writeHereUnlessLocked<T>(_ body: (Database) throws -> T) throws -> T? {
        try writer.writeWithoutTransaction { db -> T? in
            let connection = db.sqliteConnection
            sqlite3_busy_timeout(connection, 0)
            do {
                defer { sqlite3_busy_timeout(connection, Int32(Self.busyTimeout * 1000)) }
                try db.beginTransaction(.immediate)
            } catch let error as DatabaseError where error.resultCode == .SQLITE_BUSY {
                return nil
            }
            do {
                let result = try body(db)
                try db.commit()
                return result
            } catch {
                try? db.rollback()
                throw error
            }
        }
    }

    /// Runs a read transaction. A `.short` one runs on the calling thread: in WAL mode a read
    /// does not wait for a writer, so it blocks only for the read itself, and saves the two
    /// thread hand-offs of an asynchronous read (tens of microseconds each on a busy or
    /// virtualized machine). The rare read that would wait for a lock (another process
    /// recovering the WAL after a crash, say) and a `.long` one run on GRDB's reader threads.
    func readDatabase<T: Sendable>(
        _ length: TransactionLength = .long, _ body: @escaping @Sendable (Database) throws -> T
    )
        async throws -> T
    {
        let path = self.path
        if length == .short {
            do {
                if let result = try readHereUnlessLocked(body) { return result }
            } catch {
                throw Self.mapped(error, path: path)
            }
        }
        return try await withCheckedThrowingContinuation { continuation in
            writer.asyncRead { result in
                continuation.resume(
                    with: Result {
                        do {
                            return try body(try result.get())
                        } catch {
                            throw Self.mapped(error, path: path)
                        }
                    })
            }
        }
    }

    /// The read on the calling thread, unless it would have to wait for a lock (nil then): on a
    /// reader connection, or on the writer's (`onWriter`), waiting for this process's write
    /// under way there.
    func readHereUnlessLocked<T>(onWriter: Bool = false, _ body: (Database) throws -> T) throws -> T? {
        // Without GRDB's own transaction, so that no statement runs before the timeout is off.
        func read(_ db: Database) throws -> T? {
            let connection = db.sqliteConnection
            sqlite3_busy_timeout(connection, 0)
            defer { sqlite3_busy_timeout(connection, Int32(Self.busyTimeout * 1000)) }
            do {
                try db.beginTransaction(.deferred)
                defer { try? db.commit() }
                return try body(db)
            } catch let error as DatabaseError where error.resultCode == .SQLITE_BUSY {
                return nil
            }
        }
        return onWriter ? try writer.writeWithoutTransaction(read) : try writer.unsafeRead(read)
    }

    func addCommitObserver(_ observer: @escaping @Sendable () -> Void) -> UUID { commitObservers.add(observer) }

    func removeCommitObserver(_ token: UUID) { commitObservers.remove(token) }

    /// Other processes reach a store on a file; one in memory is this process's alone.
    /// Every announced commit is reported: SQLite cannot say what a commit changed.
    /// A worker pool's watch reports on a thread of its own (it claims right there).
    func otherCommitsWatch(for interest: CommitInterest) -> (any OtherCommitsWatch)? {
        ChangeWatcher(store: self, alone: interest == .claimableWork)
    }

    /// The claim outlook on the calling thread (the change watcher's, right after it saw another
    /// process commit, so the claim loop is woken only when there is something to claim).
    /// nil when it cannot tell at this moment (a lock, an error): the claim loop looks then.
    ///
    /// Read on the writer connection, where the watcher has just read `data_version`: the pages
    /// the other process's commit changed are read into the cache of the connection whose claim
    /// comes next, not into a reader's (and then again into the writer's), and no reader is
    /// taken from the pool (the outlook and the claim after it about 0.02 ms sooner,
    /// `Performance.md`). A read does not take the write lock; it waits only for this process's
    /// write under way, which a busy pool's watcher does not check during.
    func claimOutlookHere(queues: [String]) -> ClaimOutlook? {
        let now = StoreSQL.now()
        return try? readHereUnlessLocked(onWriter: true) { db in
            try StoreSQL.claimOutlook(SQLiteTransaction(db: db), queues: queues, now: now)
        }
    }

    /// `PRAGMA data_version` on the writer connection: it moves when another connection (another
    /// process, another ``JobQueue`` on the file) commits, never for this store's own commits,
    /// which all go through that connection. nil when it cannot be read now. Waits for a write
    /// under way, so it is called from the change watcher's thread, never a Swift task's.
    func othersCommitVersion() -> Int? {
        try? writer.writeWithoutTransaction { db in
            let statement = try RawStatement(db, sql: "PRAGMA data_version")
            defer { statement.reset() }
            return try statement.step() ? Int(statement.int64(0)) : nil
        }
    }

    static func mapped(_ error: any Error, path: String?) -> any Error {
        guard let error = error as? DatabaseError else { return error }
        return JobQueueError.storeUnavailable(explain(error, path: path))
    }

}
