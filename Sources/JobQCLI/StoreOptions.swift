import ArgumentParser
import Foundation
import JobQ

/// The options every command that touches a store takes.
struct StoreOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("The store file.", discussion: "Default: $JOBQ_DB, else ./jobq.sqlite.", valueName: "path"))
    var db: String?

    @Flag(name: .long, help: "Sync every commit to disk (synchronous=FULL): survives power loss, costs an fsync per commit.")
    var durable = false

    @Flag(help: "Refuse to open a store that needs schema migrations (run `jobq migrate up` first) instead of migrating it.")
    var requireMigrated = false

    var path: String {
        if let db { return db }
        if let env = ProcessInfo.processInfo.environment["JOBQ_DB"], !env.isEmpty { return env }
        return "./jobq.sqlite"
    }

    func open() throws -> JobQueue {
        try JobQueue(path: path, durability: durable ? .full : .normal, migrations: requireMigrated ? .refuseIfPending : .applyPending)
    }
}

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
