import ArgumentParser
import Foundation
import JobQ
import JobQCommandLine

#if Postgres
    import JobQPostgres
    import Logging
#endif

/// The options every command that touches a store takes.
struct StoreOptions: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "The store: an SQLite file, or a PostgreSQL URL (postgres://user@host:port/database).",
            discussion: "Default: $JOBQ_DB, else ./jobq.sqlite.", valueName: "path-or-url"))
    var db: String?

    @Flag(
        name: .long,
        help:
            "Sync every commit to disk (synchronous=FULL): survives power loss, costs an fsync per commit. SQLite only."
    )
    var durable = false

    @Flag(
        help:
            "Refuse to open a store that needs schema migrations (run `jobq migrate up` first) instead of migrating it."
    )
    var requireMigrated = false

    /// What --db (or $JOBQ_DB) says, as given.
    var path: String {
        if let db { return db }
        if let env = ProcessInfo.processInfo.environment["JOBQ_DB"], !env.isEmpty { return env }
        return "./jobq.sqlite"
    }

    var location: StoreLocation { StoreLocation(path) }

    /// The store; with `readOnly`, a file is opened changing nothing in it (a server's store as
    /// it is: no migration).
    func open(readOnly: Bool = false) async throws -> JobQueue {
        let migrations: SchemaMigrationPolicy = requireMigrated || readOnly ? .refuseIfPending : .applyPending
        if readOnly, case .file(let path) = location { return try JobQueue(readingOnly: path) }
        return try await Self.open(location, migrations: migrations, durable: durable)
    }

    /// The store at `location`, migrated as `migrations` says.
    static func open(_ location: StoreLocation, migrations: SchemaMigrationPolicy, durable: Bool) async throws
        -> JobQueue
    {
        switch location {
        case .file(let path):
            return try JobQueue(path: path, durability: durable ? .full : .normal, migrations: migrations)
        case .postgres(let url):
            #if Postgres
                return try await JobQueue(postgres: url, migrations: migrations, logger: postgresLogger)
            #else
                throw StoreLocation.withoutPostgres(url)
            #endif
        }
    }
}

#if Postgres
    /// postgres-nio's own logging stays quiet unless something is wrong; jobq's says when the
    /// server is back after an outage (at `notice`).
    let postgresLogger: Logger = {
        var logger = Logger(label: "jobq.postgres")
        logger.logLevel = .notice
        return logger
    }()
#endif

/// Parses a duration option, naming the option in the error.
func parseDuration(_ text: String, option: String) throws -> Duration {
    do {
        return try DurationParser.parse(text)
    } catch {
        throw CLIError.usage("\(option): \(error.description)")
    }
}

/// Whether standard error is a terminal (for the live status line and progress output).
var standardErrorIsTerminal: Bool { isatty(STDERR_FILENO) == 1 }

/// Parses a state option, naming the option in the error.
func parseState(_ text: String, option: String) throws -> JobState {
    do {
        return try JobState(parsing: text)
    } catch {
        throw CLIError.usage("\(option): \(error.description)")
    }
}
