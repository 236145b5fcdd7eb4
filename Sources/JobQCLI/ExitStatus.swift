import ArgumentParser
import JobQ

/// The exit codes jobq documents.
enum ExitStatus: Int32 {
    case success = 0
    /// The job or the operation failed.
    case failure = 1
    /// Usage error or bad input; nothing was changed.
    case usage = 2
    /// The job (or other thing) does not exist.
    case notFound = 3

    static func of(_ error: JobQueueError) -> ExitStatus {
        switch error {
        case .invalidInput, .incompatibleStore: return .usage
        case .notFound: return .notFound
        case .invalidState, .storeUnavailable: return .failure
        }
    }
}

/// An error raised by the command line itself, with its exit code.
struct CLIError: Error {
    let message: String
    let exitCode: ExitStatus

    static func usage(_ message: String) -> CLIError { CLIError(message: message, exitCode: .usage) }
    static func failure(_ message: String) -> CLIError { CLIError(message: message, exitCode: .failure) }
}
