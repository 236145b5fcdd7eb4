import Foundation
import JobQCore
import JobQSQL
import Logging
import PostgresNIO

/// jobq's schema on PostgreSQL: the numbered SQL files of `Migrations/postgres/`, compiled into
/// the binary and applied in order, each in its own transaction, recorded with its checksum.
///
/// One process migrates while the others wait: the migration holds a session-level advisory
/// lock, and a process that got the lock after another one migrated finds nothing left to do.
/// A database whose schema is newer than this binary, or whose applied migration was edited
/// since, is refused with an error that says what to do, and left as it is.
///
/// ```swift
/// let settings = try PostgresSettings(url: "postgres://jobq@127.0.0.1:5432/jobs")
/// let report = try await PostgresSchema.migrate(settings)
/// print(report.applied)  // ["0001_create_store.sql"] on a new database, [] after
/// ```
public enum PostgresSchema {
    /// What ``migrate(_:logger:)`` did.
    public struct Report: Sendable, Hashable {
        /// The schema version before, and after.
        public var fromVersion: Int
        public var toVersion: Int
        /// File names of the migrations this call applied, in order.
        public var applied: [String]
    }

    /// The newest schema version this binary knows.
    public static var latestVersion: Int { PostgresMigration.postgres.last?.version ?? 0 }

    /// Applies every pending migration. Waits while another process migrates.
    @discardableResult
    public static func migrate(_ settings: PostgresSettings, logger: Logger = Logger(label: "jobq.postgres"))
        async throws -> Report
    {
        let connection = try await PostgresConnector(settings: settings, logger: logger).connect()
        do {
            let report = try await migrate(on: connection, names: settings.schemaNames, logger: logger)
            try? await connection.close()
            return report
        } catch {
            try? await connection.close()
            throw error
        }
    }

    /// The database's schema version, after refusing a newer or edited schema; 0 when jobq's
    /// schema was never applied there.
    public static func version(_ settings: PostgresSettings, logger: Logger = Logger(label: "jobq.postgres"))
        async throws -> Int
    {
        let connection = try await PostgresConnector(settings: settings, logger: logger).connect()
        do {
            let version = try await check(on: connection, names: settings.schemaNames, logger: logger).version
            try? await connection.close()
            return version
        } catch {
            try? await connection.close()
            throw error
        }
    }

    /// The database's schema version and the file names of the migrations it lacks, after
    /// refusing a newer or edited schema.
    public static func pending(
        _ settings: PostgresSettings, logger: Logger = Logger(label: "jobq.postgres")
    ) async throws -> (version: Int, pending: [String]) {
        let connection = try await PostgresConnector(settings: settings, logger: logger).connect()
        do {
            let (version, pending) = try await check(on: connection, names: settings.schemaNames, logger: logger)
            try? await connection.close()
            return (version, pending.map(\.name))
        } catch {
            try? await connection.close()
            throw error
        }
    }

    static func migrate(
        on connection: PostgresConnection, names: SchemaNames, logger: Logger,
        migrations: [PostgresMigration] = PostgresMigration.postgres
    ) async throws -> Report {
        // Up to date already (every open but the first after an upgrade): read without setting
        // or locking anything, so that opening through a pooler in transaction mode leaves no
        // session setting or session lock behind on a server connection others then get.
        if let (version, pending) = try? await check(
            on: connection, names: names, logger: logger, migrations: migrations),
            version > 0, pending.isEmpty,
            !(try await hasStoreInPublic(on: connection, names: names, logger: logger))
        {
            return Report(fromVersion: version, toVersion: version, applied: [])
        }
        // A migration may build an index over millions of rows, and a second process waits here
        // for the first to finish: neither is bounded like the hot path's statements.
        try await run(connection, logger, "SET statement_timeout = 0")
        try await run(connection, logger, "SET lock_timeout = 0")
        // The store's own lock (``SchemaNames/migrationLockKey``): stores in other schemas of
        // the database migrate meanwhile.
        return try await holding(names.migrationLockKey, on: connection, logger: logger) {
            try await migrateLocked(on: connection, names: names, logger: logger, migrations: migrations)
        }
    }

    /// Runs `body` holding the session-level advisory lock `key`, released after it whatever
    /// happens (closing the connection releases it as well).
    private static func holding<T>(
        _ key: Int64, on connection: PostgresConnection, logger: Logger, _ body: () async throws -> T
    ) async throws -> T {
        try await run(connection, logger, "SELECT pg_advisory_lock(\(key))")
        do {
            let result = try await body()
            try await run(connection, logger, "SELECT pg_advisory_unlock(\(key))")
            return result
        } catch {
            try? await run(connection, logger, "SELECT pg_advisory_unlock(\(key))")
            throw error
        }
    }

    private static func migrateLocked(
        on connection: PostgresConnection, names: SchemaNames, logger: Logger, migrations: [PostgresMigration]
    ) async throws -> Report {
        try await run(connection, logger, "CREATE SCHEMA IF NOT EXISTS \(names.quotedSchema)")
        try await moveStoreFromPublic(on: connection, names: names, logger: logger)
        try await run(
            connection, logger,
            """
            CREATE TABLE IF NOT EXISTS \(names.table("schema_migrations")) (
                version     integer PRIMARY KEY,
                name        text NOT NULL,
                checksum    text NOT NULL,
                applied_at  double precision NOT NULL
            )
            """)
        let (version, pending) = try await check(on: connection, names: names, logger: logger, migrations: migrations)
        var report = Report(fromVersion: version, toVersion: version, applied: [])
        for migration in pending {
            let statements = try PostgresScript.statements(in: migration.sql)
            do {
                try await connection.withTransaction(logger: logger) { connection in
                    // Migrations name tables bare (those before the schema) or with jobq's
                    // names: both are the schema's tables.
                    try await connection.query(
                        PostgresQuery(unsafeSQL: "SET LOCAL search_path TO \(names.quotedSchema)"), logger: logger)
                    for statement in statements {
                        try await connection.query(
                            PostgresQuery(unsafeSQL: withStoreValues(names.qualified(statement), names)), logger: logger
                        )
                    }
                    // Values interpolated into a PostgresQuery are bound, never spliced.
                    let appliedAt = Date().timeIntervalSince1970
                    try await connection.query(
                        """
                        INSERT INTO \(unescaped: names.table("schema_migrations")) (version, name, checksum, applied_at)
                        VALUES (\(migration.version), \(migration.name), \(migration.checksum), \(appliedAt))
                        """,
                        logger: logger)
                }
            } catch {
                throw JobQueueError.storeUnavailable(
                    "schema migration \(migration.name) failed and was rolled back: \(PostgresConnector.explain(transactionCause(error)))"
                )
            }
            logger.info("applied schema migration \(migration.name)")
            report.applied.append(migration.name)
            report.toVersion = migration.version
        }
        return report
    }

    /// Whether `names` is to receive a store made before schemas, still in `public`: only the
    /// default schema does (such a store was opened by a URL that named no schema, and still
    /// is), and only a store that its own version record shows was made before schemas (its
    /// `schema_migrations` is jobq's, its first migration recorded with its checksum, and it
    /// never applied ``schemaMigrationVersion``). A store made in `public` on purpose
    /// (`?schema=public`) has applied it, and stays where it is.
    static func hasStoreInPublic(on connection: PostgresConnection, names: SchemaNames, logger: Logger) async throws
        -> Bool
    {
        guard names.isDefault, let first = PostgresMigration.postgres.first else { return false }
        let schemaTable = names.table("schema_migrations")
        let found =
            try await connection.query(
                """
                SELECT to_regclass(\(schemaTable)) IS NULL AND to_regclass('public.schema_migrations') IS NOT NULL
                    AND (SELECT count(*) FROM information_schema.columns WHERE table_schema = 'public'
                        AND table_name = 'schema_migrations' AND column_name IN ('version', 'checksum')) = 2
                """, logger: logger
            ).collect().first?.decode(Bool.self) ?? false
        guard found else { return false }
        var firstChecksum: String?
        var newest = 0
        for try await (version, checksum) in try await connection.query(
            "SELECT CAST(version AS text), CAST(checksum AS text) FROM public.schema_migrations", logger: logger
        ).decode((String, String).self) {
            guard let version = Int(version) else { return false }
            if version == first.version { firstChecksum = checksum }
            newest = max(newest, version)
        }
        return firstChecksum == first.checksum && newest < schemaMigrationVersion
    }

    /// The migration that moved jobq's tables into a schema of their own
    /// (`0009_schema_of_its_own.sql`): a store that applied it was made where it is.
    static let schemaMigrationVersion = 9

    /// `sql` with the store's own values (``SchemaNames/migrationValues``) in place of their
    /// `@JOBQ_NAME@`s.
    private static func withStoreValues(_ sql: String, _ names: SchemaNames) -> String {
        guard sql.contains("@JOBQ_") else { return sql }
        return names.migrationValues.reduce(sql) { $0.replacingOccurrences(of: $1.key, with: $1.value) }
    }

    /// Moves a store made before schemas from `public` into `names`' schema, all or nothing:
    /// every table with its rows, indexes and sequences, and the success function.
    private static func moveStoreFromPublic(on connection: PostgresConnection, names: SchemaNames, logger: Logger)
        async throws
    {
        guard try await hasStoreInPublic(on: connection, names: names, logger: logger) else { return }
        // A process told `?schema=public` migrates that store in place under public's own lock:
        // this one waits for it, and looks again.
        try await holding(SchemaNames.shared("public").migrationLockKey, on: connection, logger: logger) {
            guard try await hasStoreInPublic(on: connection, names: names, logger: logger) else { return }
            try await moveLockedStoreFromPublic(on: connection, names: names, logger: logger)
        }
    }

    private static func moveLockedStoreFromPublic(
        on connection: PostgresConnection, names: SchemaNames, logger: Logger
    ) async throws {
        logger.notice(
            "moving the jobq store made before schemas (its tables in schema public, at a version before \(schemaMigrationVersion)) into schema \(names.quotedSchema)"
        )
        var tables: [String] = []
        for try await (name, ) in try await connection.query(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'public'", logger: logger
        ).decode((String,).self) where StoreTables.names.contains(name) {
            tables.append(name)
        }
        var functions: [String] = []
        for try await (signature, ) in try await connection.query(
            """
            SELECT CAST(CAST(p.oid AS regprocedure) AS text) FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
            WHERE n.nspname = 'public' AND p.proname = 'jobq_record_successes'
            """, logger: logger
        ).decode((String,).self) {
            functions.append(signature)
        }
        do {
            try await connection.withTransaction(logger: logger) { connection in
                for table in tables.sorted() {
                    try await connection.query(
                        PostgresQuery(unsafeSQL: "ALTER TABLE public.\(table) SET SCHEMA \(names.quotedSchema)"),
                        logger: logger)
                }
                for function in functions {
                    try await connection.query(
                        PostgresQuery(unsafeSQL: "ALTER FUNCTION \(function) SET SCHEMA \(names.quotedSchema)"),
                        logger: logger)
                }
            }
        } catch {
            throw JobQueueError.storeUnavailable(
                "moving the jobq store from schema public to \(names.quotedSchema) failed and was rolled back: "
                    + PostgresConnector.explain(transactionCause(error)))
        }
        logger.notice(
            "moved the jobq store's \(tables.count) tables from schema public to \(names.quotedSchema), keeping every row"
        )
    }

    static func check(
        on connection: PostgresConnection, names: SchemaNames, logger: Logger,
        migrations: [PostgresMigration] = PostgresMigration.postgres
    ) async throws -> (version: Int, pending: [PostgresMigration]) {
        // A store still in `public` reads as it is there: what `migrate` will bring over.
        let inPublic = try await hasStoreInPublic(on: connection, names: names, logger: logger)
        let table = inPublic ? "public.schema_migrations" : names.table("schema_migrations")
        let exists =
            try await connection.query("SELECT to_regclass(\(table)) IS NOT NULL", logger: logger)
            .collect().first?.decode(Bool.self) ?? false
        var applied: [(version: Int, name: String, checksum: String)] = []
        if exists {
            for try await (version, name, checksum) in try await connection.query(
                PostgresQuery(unsafeSQL: "SELECT version, name, checksum FROM \(table) ORDER BY version"),
                logger: logger
            ).decode((Int, String, String).self) {
                applied.append((version, name, checksum))
            }
        }
        let latest = migrations.last?.version ?? 0
        let version = applied.last?.version ?? 0
        if version > latest {
            throw JobQueueError.incompatibleStore(
                "this PostgreSQL database has jobq schema version \(version), newer than this jobq knows (\(latest)): "
                    + "upgrade jobq on this machine, or point it at another database")
        }
        let known = Dictionary(uniqueKeysWithValues: migrations.map { ($0.version, $0) })
        for row in applied {
            guard let migration = known[row.version] else { continue }
            if row.checksum != migration.checksum {
                throw JobQueueError.incompatibleStore(
                    "schema migration \(migration.name) was applied with checksum \(row.checksum.prefix(12)) but this jobq embeds "
                        + "\(migration.checksum.prefix(12)): the file was edited after it shipped. Restore the original file and add "
                        + "schema changes as a new numbered migration in Migrations/postgres/")
            }
        }
        return (version, migrations.filter { $0.version > version })
    }

    private static func run(_ connection: PostgresConnection, _ logger: Logger, _ sql: String) async throws {
        try await connection.query(PostgresQuery(unsafeSQL: sql), logger: logger)
    }

    /// The error inside postgres-nio's transaction wrapper.
    private static func transactionCause(_ error: any Error) -> any Error {
        if let error = error as? PostgresTransactionError {
            return error.closureError ?? error.beginError ?? error.commitError ?? error
        }
        return error
    }
}

/// The numbered SQL files of `Migrations/postgres/`, compiled into the binary.
typealias PostgresMigration = SchemaMigration

extension SchemaMigration {
    static let postgres = numbered(embeddedMigrationFiles)
}
