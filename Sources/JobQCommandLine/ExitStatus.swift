import ArgumentParser
import Foundation
import JobQCore

/// The exit codes jobq documents.
package enum ExitStatus: Int32 {
    case success = 0
    /// The job or the operation failed.
    case failure = 1
    /// Usage error or bad input; nothing was changed.
    case usage = 2
    /// The job (or other thing) does not exist.
    case notFound = 3
    /// Events after the cursor given were deleted (retention, `jobq prune`): nothing was read.
    case eventsDeleted = 4

    /// Prints `error` where it belongs (help and version to standard output, the rest to
    /// standard error) and returns the exit code for it. `command` is the root command, whose
    /// parser explains its own parsing errors.
    package static func report(_ error: any Error, of command: any ParsableCommand.Type) -> Int32 {
        switch error {
        case let error as CLIError:
            printError(error.message)
            return error.exitCode.rawValue
        case let error as JobQueueError:
            printError(error.description)
            return ExitStatus.of(error).rawValue
        case let code as ExitCode:
            return code.rawValue
        default:
            let code = command.exitCode(for: error)
            let message = command.fullMessage(for: error)
            if code == .success {
                print(message)
                return 0
            }
            if !message.isEmpty { printError(message) }
            // Every parsing and validation error is a usage error: exit 2.
            return ExitStatus.usage.rawValue
        }
    }

    package static func of(_ error: JobQueueError) -> ExitStatus {
        switch error {
        case .invalidInput, .incompatibleStore: return .usage
        case .notFound: return .notFound
        case .invalidState, .storeUnavailable: return .failure
        case .eventsDeleted: return .eventsDeleted
        }
    }
}

/// An error raised by the command line itself, with its exit code.
package struct CLIError: Error {
    package let message: String
    package let exitCode: ExitStatus

    package init(message: String, exitCode: ExitStatus) {
        self.message = message
        self.exitCode = exitCode
    }

    package static func usage(_ message: String) -> CLIError { CLIError(message: message, exitCode: .usage) }
    package static func failure(_ message: String) -> CLIError { CLIError(message: message, exitCode: .failure) }
}

/// Prints `message` to standard error as `error: message`.
package func printError(_ message: String) {
    let text = message.hasPrefix("Error:") || message.hasPrefix("error:") ? message : "error: \(message)"
    FileHandle.standardError.write(Data((text + "\n").utf8))
}
