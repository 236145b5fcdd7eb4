import ArgumentParser
import Foundation
import JobQ
import JobQCommandLine

#if Postgres
    import JobQPostgres
#endif

struct MigrateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate",
        abstract: "Show or apply the store's schema migrations.",
        discussion: helpText(
            """
            Every command migrates an older store when it opens it; `jobq migrate up` does it as a
            separate step (e.g. before starting workers), with a dry run and a choice of target.
            Before migrating a store that holds data, a backup is written next to it:
            <store>.v<old version>-<UTC time>.backup (the store and migrations article, StoreAndMigrations.md, says how to restore one).
            """),
        subcommands: [MigrateStatusCommand.self, MigrateUpCommand.self]
    )
}

struct MigrateStatusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "The store's schema version, this jobq's latest, pending migrations, and data migrators.")

    @OptionGroup var store: StoreOptions

    @Flag(help: "Print one JSON object.")
    var json = false

    func run() async throws {
        let status = try await schemaStatus()
        if json {
            print(try encodeJSON(status))
            return
        }
        print("store:           \(store.location.description)")
        print("schema version:  \(status.currentVersion) (this jobq: \(status.latestVersion))")
        if status.pending.isEmpty {
            print("pending:         none")
        } else {
            print("pending:         \(status.pending.joined(separator: ", ")); run `jobq migrate up`")
        }
        if status.dataMigrators.isEmpty {
            print("data migrators:  none recorded")
        } else {
            print("data migrators:")
            for migrator in status.dataMigrators {
                let behind = migrator.version < migrator.targetVersion ? " (behind)" : ""
                print("  \(migrator.name): version \(migrator.version) of \(migrator.targetVersion)\(behind)")
            }
        }
    }

    private func schemaStatus() async throws -> SchemaStatus {
        switch store.location {
        case .file(let path):
            return try JobQueue.schemaStatus(path: path)
        case .postgres(let url):
            #if Postgres
                let settings = try PostgresSettings(url: url)
                let (version, pending) = try await PostgresSchema.pending(settings, logger: postgresLogger)
                // Data migrators are recorded in the store's tables, which exist once it is migrated.
                let migrators =
                    pending.isEmpty
                    ? try await JobQueue(postgres: settings, migrations: .refuseIfPending, logger: postgresLogger)
                        .dataMigrators() : []
                return SchemaStatus(
                    path: store.location.description, currentVersion: version,
                    latestVersion: PostgresSchema.latestVersion, applied: [],
                    pending: pending, dataMigrators: migrators)
            #else
                throw StoreLocation.withoutPostgres(url)
            #endif
        }
    }
}

struct MigrateUpCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "up",
        abstract: "Apply pending schema migrations, each in its own transaction.")

    @OptionGroup var store: StoreOptions

    @Option(help: "Stop at this schema version (default: the latest).")
    var to: Int?

    @Flag(help: "Print what would run; change nothing.")
    var dryRun = false

    @Flag(help: "Do not write a backup before migrating.")
    var noBackup = false

    func run() async throws {
        let report = try await migrate()
        if report.migrations.isEmpty {
            print("schema is at version \(report.fromVersion); nothing to do")
            return
        }
        let verb = dryRun ? "would apply" : "applied"
        for name in report.migrations { print("\(verb) \(name)") }
        if let backup = report.backupPath { print("backup: \(backup)") }
        print(
            dryRun
                ? "dry run: the store stays at version \(report.fromVersion); \(report.toVersion) after `jobq migrate up`"
                : "schema is at version \(report.toVersion) (was \(report.fromVersion))")
    }

    private func migrate() async throws -> SchemaMigrationReport {
        switch store.location {
        case .file(let path):
            return try JobQueue.migrateSchema(path: path, to: to, backup: !noBackup, dryRun: dryRun)
        case .postgres(let url):
            #if Postgres
                let settings = try PostgresSettings(url: url)
                if let to, to != PostgresSchema.latestVersion {
                    throw CLIError.usage(
                        "--to \(to): a PostgreSQL store migrates to this jobq's latest version (\(PostgresSchema.latestVersion)) only; "
                            + "leave --to out")
                }
                let (version, pending) = try await PostgresSchema.pending(settings, logger: postgresLogger)
                if dryRun || pending.isEmpty {
                    return SchemaMigrationReport(
                        fromVersion: version, toVersion: pending.isEmpty ? version : PostgresSchema.latestVersion,
                        migrations: pending,
                        backupPath: nil, dryRun: dryRun)
                }
                // No backup file: a database server's backups are its own (pg_dump, base backups).
                let report = try await PostgresSchema.migrate(settings, logger: postgresLogger)
                return SchemaMigrationReport(
                    fromVersion: report.fromVersion, toVersion: report.toVersion, migrations: report.applied,
                    backupPath: nil, dryRun: false)
            #else
                throw StoreLocation.withoutPostgres(url)
            #endif
        }
    }
}

func encodeJSON(_ value: some Encodable) throws -> String {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    encoder.dateEncodingStrategy = .iso8601
    return String(decoding: try encoder.encode(value), as: UTF8.self)
}
