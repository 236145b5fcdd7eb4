import Foundation
import JobQCore
import JobQSQL
import Logging

extension JobQueue {
    /// Opens the jobq store in a PostgreSQL database, applying pending schema migrations (one
    /// process migrates while the others wait), or refusing a newer or edited schema.
    ///
    /// Everything else is as on SQLite: the same jobs, workers, workflows, trees, schedules and
    /// events, shared by processes on as many machines as reach the server.
    ///
    /// ```swift
    /// let queue = try await JobQueue(postgres: "postgres://jobq@db.internal:5432/jobs?sslmode=require")
    /// try await queue.enqueue(Sum.self, .init(a: 1, b: 2))
    /// ```
    ///
    /// - Parameters:
    ///   - url: `postgres://user[:password]@host[:port]/database[?sslmode=...]`. Without a
    ///     password in it, `PGPASSWORD` and then `~/.pgpass` are used. Never logged.
    ///   - migrations: Whether an older schema is migrated on open (the default) or refused.
    ///   - logger: Where the store logs connection trouble and migrations.
    public convenience init(
        postgres url: String, migrations: SchemaMigrationPolicy = .applyPending,
        logger: Logger = Logger(label: "jobq.postgres")
    ) async throws {
        try await self.init(postgres: try PostgresSettings(url: url), migrations: migrations, logger: logger)
    }

    /// The same with the URL as a `URL`.
    ///
    /// ```swift
    /// let queue = try await JobQueue(postgres: URL(string: "postgres://jobq@db.internal/jobs")!)
    /// ```
    public convenience init(
        postgres url: URL, migrations: SchemaMigrationPolicy = .applyPending,
        logger: Logger = Logger(label: "jobq.postgres")
    ) async throws {
        try await self.init(postgres: url.absoluteString, migrations: migrations, logger: logger)
    }

    /// The same with settings made already (a password from elsewhere, say).
    ///
    /// ```swift
    /// var settings = try PostgresSettings(url: "postgres://jobq@db.internal/jobs")
    /// settings.database = "jobs_staging"
    /// let queue = try await JobQueue(postgres: settings)
    /// ```
    public convenience init(
        postgres settings: PostgresSettings, migrations: SchemaMigrationPolicy = .applyPending,
        logger: Logger = Logger(label: "jobq.postgres")
    ) async throws {
        guard ConnectionLayout.allowed.contains(settings.connections) else {
            throw JobQueueError.invalidInput(
                "PostgresSettings.connections is \(settings.connections); give \(ConnectionLayout.allowed.lowerBound) to \(ConnectionLayout.allowed.upperBound) "
                    + "(connections one process opens at most; 3 by default)")
        }
        try PostgresSettings.checkApplicationName(settings.applicationName)
        switch migrations {
        case .applyPending:
            try await PostgresSchema.migrate(settings, logger: logger)
        case .refuseIfPending:
            let version = try await PostgresSchema.version(settings, logger: logger)
            if version < PostgresSchema.latestVersion {
                throw JobQueueError.incompatibleStore(
                    "the PostgreSQL store at \(settings) is at schema version \(version) and this jobq needs "
                        + "\(PostgresSchema.latestVersion); run `jobq migrate up --db <url>` first")
            }
        }
        self.init(server: PostgresServer(settings: settings, logger: logger))
    }
}
