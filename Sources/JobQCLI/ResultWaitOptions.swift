import ArgumentParser
import JobQ
import JobQCommandLine

/// `--wait [--wait-timeout D]` of `enqueue` and `workflow submit`: wait for what was just
/// stored to finish, print its result JSON, and exit as `jobq wait` does.
struct ResultWaitOptions: ParsableArguments {
    @Flag(
        help:
            "Wait until it finishes and print its result JSON: exit 0 if it succeeded, 1 if it failed, died or was cancelled, 124 after --wait-timeout (as `jobq wait`)."
    )
    var wait = false

    // Not --timeout: that is an attempt's limit.
    @Option(help: ArgumentHelp("With --wait: give up after this long (exit 124).", valueName: "duration"))
    var waitTimeout: String?

    /// The wait's limit, after checking the options go together.
    func limit() throws -> Duration {
        guard wait || waitTimeout == nil else { throw CLIError.usage("--wait-timeout goes with --wait") }
        // No limit: a year is for ever for a command line.
        return try waitTimeout.map { try parseDuration($0, option: "--wait-timeout") } ?? .seconds(365 * 86_400)
    }

    /// Prints the result `fetch` waits for; says why there is none and exits 1, or 124 when the
    /// wait ran out.
    func printResult(within limit: Duration, _ fetch: (Duration) async throws -> String) async throws {
        do {
            print(try await fetch(limit))
        } catch let error as JobResultError {
            printError("\(error)")
            if case .timedOut = error { throw ExitCode(124) }
            throw ExitCode(1)
        } catch let error as WorkflowResultError {
            printError("\(error)")
            if case .timedOut = error { throw ExitCode(124) }
            throw ExitCode(1)
        }
    }
}
