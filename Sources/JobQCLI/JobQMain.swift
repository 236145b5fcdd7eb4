import ArgumentParser
import Foundation
import JobQ
import JobQCommandLine
import JobQCore

/// Runs the command line and turns every error into a message and a documented exit code:
/// 0 success, 1 the job or operation failed, 2 usage or bad input, 3 not found.
@main
enum JobQMain {
    static func main() async {
        // Before anything opens a store: SQLite reads these settings once, at initialization.
        JobQueue.tuneSQLiteBeforeFirstUse()
        do {
            try refuseInvalidUTF8Arguments()
            // Swift's copy of the arguments is taken first; then a password in a URL among them
            // is hidden from /proc/PID/cmdline, where every local user and every shell job could
            // read it for as long as a worker runs.
            let given = CommandLine.arguments
            WorkerSecrets.hidePasswordsInArguments()
            let arguments = GlobalArguments.moveAfterSubcommand(Array(given.dropFirst()))
            var command = try JobQCommand.parseAsRoot(arguments)
            if var command = command as? AsyncParsableCommand {
                try await command.run()
            } else {
                try command.run()
            }
        } catch {
            exit(code: report(error))
        }
    }

    /// Swift replaces bytes that are not UTF-8 in `CommandLine.arguments` with U+FFFD, which
    /// would then be stored as if the user had typed it: the raw arguments are checked first.
    static func refuseInvalidUTF8Arguments() throws {
        for index in 1..<Int(CommandLine.argc) {
            guard let raw = CommandLine.unsafeArgv[index] else { continue }
            let bytes = UnsafeBufferPointer(
                start: UnsafeRawPointer(raw).assumingMemoryBound(to: UInt8.self), count: strlen(raw))
            if String(validating: bytes, as: UTF8.self) == nil {
                throw CLIError.usage(
                    "argument \(index) is not valid UTF-8 (\(String(decoding: bytes, as: UTF8.self))); jobq stores text as given, "
                        + "so convert it to UTF-8 first (e.g. with iconv)")
            }
        }
    }

    /// Prints the error where it belongs and returns the exit code.
    static func report(_ error: Error) -> Int32 { ExitStatus.report(error, of: JobQCommand.self) }

    static func exit(code: Int32) -> Never {
        Foundation.exit(code)
    }
}

/// Lets the store options come before the subcommand (`jobq --db PATH list`), as global options
/// do in most tools. Argument parser reads them as options of each subcommand, so they are moved
/// to just after the subcommand's name.
enum GlobalArguments {
    static func moveAfterSubcommand(_ arguments: [String]) -> [String] {
        var globals: [String] = []
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            if argument == "--durable" || argument == "--require-migrated" || argument.hasPrefix("--db=") {
                globals.append(argument)
                index += 1
            } else if argument == "--db", index + 1 < arguments.count {
                globals += [argument, arguments[index + 1]]
                index += 2
            } else {
                break
            }
        }
        guard !globals.isEmpty, index < arguments.count else { return arguments }
        // Walk down the subcommand path (e.g. `migrate status`) and insert the options after it.
        var command: ParsableCommand.Type = JobQCommand.self
        var end = index
        while end < arguments.count,
            let sub = command.configuration.subcommands.first(where: { $0._commandName == arguments[end] })
        {
            command = sub
            end += 1
        }
        // Not a subcommand (a typo, or --help): leave the arguments for the parser to explain.
        guard end > index else { return Array(arguments[index...]) }
        return Array(arguments[index..<end]) + globals + Array(arguments[end...])
    }
}
