import Foundation

/// Upgrades your own data step by step, with its version recorded in the jobq store.
///
/// The four hooks of a classic versioned migrator:
/// - ``initialize(_:)`` runs once, on a fresh install only (no version recorded yet); the
///   recorded version then becomes ``targetVersion`` with no steps run, because fresh data is
///   already in the current shape.
/// - ``targetVersion`` is the version this code wants the data at.
/// - ``needsMigration(to:context:)``: is there anything to do for step N? A step that says no
///   is recorded as done without running.
/// - ``migrate(to:context:)``: do step N.
///
/// Steps run in order from the recorded version + 1 to the target. A step that throws stops the
/// run; the recorded version stays at the last good step and the next run resumes there.
///
/// ```swift
/// struct NotesMigrator: DataMigrator {
///     static let name = "notes"
///     static let targetVersion = 3
///
///     func initialize(_ context: DataMigrationContext) async throws {
///         try FileManager.default.createDirectory(atPath: "notes", withIntermediateDirectories: true)
///     }
///
///     func migrate(to version: Int, context: DataMigrationContext) async throws {
///         switch version {
///         case 2: try renameLegacyFiles()
///         case 3: try await context.write { db in try db.execute("ALTER TABLE notes ADD COLUMN pinned INTEGER") }
///         default: break
///         }
///     }
/// }
///
/// try await queue.runDataMigration(NotesMigrator())                       // now, waiting
/// try await queue.runDataMigration(NotesMigrator(), waitUntilDone: false) // as background jobs
/// ```
///
/// A step that changes tables in the jobq store through ``DataMigrationContext/write(_:)`` is
/// atomic with the record of its number. A step that changes anything else (files, another
/// database) is recorded right after it returns; if the process dies in between, the step runs
/// again, so write such steps to be safe to repeat.
public protocol DataMigrator: Sendable {
    /// The name the version is recorded under. Several migrators coexist, each under its own.
    static var name: String { get }
    /// The version this code wants the data at (at least 1).
    static var targetVersion: Int { get }

    /// Runs once, on a fresh install only. Default: nothing.
    func initialize(_ context: DataMigrationContext) async throws
    /// Whether step `version` has anything to do. Default: true.
    func needsMigration(to version: Int, context: DataMigrationContext) async throws -> Bool
    /// Does step `version`.
    func migrate(to version: Int, context: DataMigrationContext) async throws
}

extension DataMigrator {
    public func initialize(_ context: DataMigrationContext) async throws {}
    public func needsMigration(to version: Int, context: DataMigrationContext) async throws -> Bool { true }
}

/// What a data migration step can use.
public struct DataMigrationContext: Sendable {
    /// The migrator's name.
    public let migrator: String
    /// The step being run: its version, or the target version for ``DataMigrator/initialize(_:)``.
    public let version: Int
    /// Whether the step runs as a background job (`waitUntilDone: false`).
    public let isBackground: Bool

    let recorder: StepRecorder

    /// Runs `body` in one write transaction on the jobq store that also records this step as
    /// done: the step's changes and its record commit together, or not at all. Use it at most
    /// once per step, for tables you keep in the jobq store. It works the same on SQLite and on
    /// PostgreSQL (`import JobQ` also offers `writeSQLite`, which hands over GRDB's `Database`).
    ///
    /// ```swift
    /// try await context.write { db in
    ///     try db.execute("UPDATE notes SET pinned = 0 WHERE pinned IS NULL")
    /// }
    /// ```
    ///
    /// - Throws: ``JobQueueError/invalidState(_:)`` when the step calls it a second time, or when
    ///   another run recorded the step first (this run's changes are then rolled back).
    @discardableResult
    public func write<T: Sendable>(_ body: @escaping @Sendable (DataMigrationTransaction) throws -> T) async throws -> T
    {
        try await recorder.recordWithChanges(body)
    }
}

/// What ``JobQueue/runDataMigration(_:waitUntilDone:queue:)`` did.
public struct DataMigrationReport: Sendable, Hashable, Codable {
    public var migrator: String
    /// The recorded version before the run (nil: never recorded, a fresh install).
    public var fromVersion: Int?
    /// The recorded version after the run (for a background run: before its jobs ran).
    public var toVersion: Int
    public var targetVersion: Int
    /// Whether `initialize` ran.
    public var initialized: Bool
    /// Steps that ran.
    public var migrated: [Int]
    /// Steps recorded without running because `needsMigration` said there was nothing to do.
    public var skipped: [Int]
    /// For a background run: the job of the first step, or of the chain already in progress.
    public var jobID: JobID?
}

/// A data migrator's recorded state, as `jobq migrate status` shows it.
public struct DataMigratorStatus: Sendable, Hashable, Codable {
    public var name: String
    public var version: Int
    /// The target the code asked for the last time it ran.
    public var targetVersion: Int
    public var updatedAt: Date

    package init(name: String, version: Int, targetVersion: Int, updatedAt: Date) {
        self.name = name
        self.version = version
        self.targetVersion = targetVersion
        self.updatedAt = updatedAt
    }
}
