import Logging

/// Whether a store error is worth retrying as it is.
///
/// Transient: the connection was lost, a lock or statement timed out, the transaction was
/// chosen as a deadlock or serialization victim, the server is starting or shutting down, the
/// disk is full or SQLite stayed busy. The same write may succeed later.
///
/// Permanent: the server refused the data itself (PostgreSQL's class 22, data exceptions such
/// as a NUL in text or a value out of range; class 23, constraint violations; class 42, a
/// statement it cannot run), or jobq refused the input. The same write fails again however
/// often it is tried, so it must be changed (the one job it concerns ended or skipped), never
/// retried as it is: retried, it would hold up everything queued behind it.
///
/// ```swift
/// if StoreErrorKind(of: error) == .transient { /* back off and try again */ }
/// ```
package enum StoreErrorKind: Sendable, Equatable {
    case transient
    case permanent

    package init(of error: any Error) {
        switch error {
        case let failure as QueueClaimFailure:
            self.init(of: failure.underlying)
        case let error as JobQueueError:
            switch error {
            case .invalidInput, .notFound, .invalidState, .incompatibleStore, .eventsDeleted:
                self = .permanent
            case .storeUnavailable(let message):
                self = Self.sqlState(in: message).map(Self.init(sqlState:)) ?? .transient
            }
        default:
            self = .transient
        }
    }

    /// By a PostgreSQL SQLSTATE's class (its first two characters).
    package init(sqlState: String) {
        switch sqlState.prefix(2) {
        // Connection exception, insufficient resources, operator intervention (a cancelled
        // statement, a server shutting down), system error, transaction rollback (deadlock,
        // serialization), object not in prerequisite state (a lock not available).
        case "08", "53", "57", "58", "40", "55", "XX": self = .transient
        default: self = .permanent
        }
    }

    /// Whether `error` is the store out of reach: a connection lost or never opened (SQLSTATE
    /// class 08), the server ending sessions (57P01 shutting down, 57P02 after a crash), starting
    /// (57P03) or out of connections (53300). A store out of reach says so itself, once per
    /// outage, so callers log the failures it causes at `debug`: one outage fails every
    /// statement in flight at once, and a line each would bury what happened.
    package static func isOutage(_ error: any Error) -> Bool {
        let message: String
        switch error {
        case let failure as QueueClaimFailure: return isOutage(failure.underlying)
        case JobQueueError.storeUnavailable(let said): message = said
        default: return false
        }
        guard let state = sqlState(in: message) else { return false }
        return state.hasPrefix("08") || ["57P01", "57P02", "57P03", "53300"].contains(state)
    }

    /// The SQLSTATE PostgreSQL's refusals carry in jobq's message: "... (SQLSTATE 22021) in: ...".
    static func sqlState(in message: String) -> String? {
        guard let range = message.range(of: "(SQLSTATE ") else { return nil }
        let code = message[range.upperBound...].prefix(5)
        return code.count == 5 ? String(code) : nil
    }
}

extension Logger {
    /// Logs a failed store operation at `level`, or at `debug` when the store is out of reach
    /// (``StoreErrorKind/isOutage(_:)``: the store said that itself, once).
    package func storeFailure(_ level: Logger.Level, _ error: any Error, _ message: @autoclosure () -> Logger.Message) {
        log(level: StoreErrorKind.isOutage(error) ? .debug : level, message())
    }
}
