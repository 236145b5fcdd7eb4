import Foundation
import JobQCore
import Logging
import PostgresNIO
import Synchronization

/// What this process knows of its server being out of reach, per store (by URL): a restart, a
/// failover, a network cut, or a server that has no connections to spare.
///
/// An outage is said once, when the first connection is lost or the first connect refused:
/// every connection of every worker pool and reader of the process fails together, and a line
/// each (or one per failed statement) would bury what happened. The statements that failed
/// with it are logged at `debug` by their callers (``StoreErrorKind/isOutage(_:)``), and the
/// process says at `info` when a connection opens again and how long it was out. If the
/// outage lasts, it is said again every ``quietPeriod``.
enum ServerOutage {
    /// After a warning, how long the same outage goes unsaid.
    static let quietPeriod: Duration = .seconds(300)
    /// How long after an outage this process's reclaims of expired leases wait: the workers that
    /// hold those jobs were cut off too, and renew their leases (every 5 s at most) and write the
    /// outcomes they hold once the server answers. Reclaimed before, a job finished during the
    /// outage would run again.
    static let reclaimHold: Duration = .seconds(15)

    private struct Reach {
        /// Whether a connection to the server ever opened in this process: until then a connect
        /// that finds no server fails at once (a wrong URL, a server not started), since it
        /// is not an outage of a server this process was using.
        var connected = false
        /// Since when the server is out of reach, nil while it is not.
        var since: ContinuousClock.Instant?
        var warned: ContinuousClock.Instant?
        /// Whether the current outage was said.
        var said = false
        /// When the last outage ended.
        var ended: ContinuousClock.Instant?
    }
    private static let reach = Mutex<[String: Reach]>([:])

    /// Whose reach `settings` share: the server, database and role they connect to, whatever
    /// the connection's name (the LISTEN connection is `<name>-listen`), so that a process says
    /// an outage or a refusal once, not once per kind of connection.
    private static func key(_ settings: PostgresSettings) -> String {
        var server = settings
        server.applicationName = PostgresSettings.defaultApplicationName
        return "\(server)"
    }

    /// Whether `error` is a connection failing or the server going away: the connection was
    /// closed under a statement, or the server ended it (57P01 administrator command, 57P02 a
    /// crash of another backend).
    static func isConnectionLost(_ error: any Error) -> Bool {
        if error is ClosedUnanswered { return true }
        guard let error = error as? PSQLError else { return false }
        if let state = error.serverInfo?[.sqlState] { return state == "57P01" || state == "57P02" }
        return error.code == .connectionError || error.code == .serverClosedConnection
            || error.code == .uncleanShutdown
    }

    /// Whether a connect that failed with `error` is worth trying again after a pause: the
    /// server refuses connections for now (53300 too many connections, 57P03 starting or
    /// shutting down), or, for a process that was connected before, it does not answer at all
    /// (restarting, failing over, a network cut).
    static func connectMayWork(after error: any Error, settings: PostgresSettings) -> Bool {
        if isRefusedForNow(error) { return true }
        guard isConnectionLost(error) else { return false }
        return reach.withLock { $0[key(settings)]?.connected ?? false }
    }

    /// Whether `error` is the server refusing a connection for now.
    static func isRefusedForNow(_ error: any Error) -> Bool {
        guard let error = error as? PSQLError, let state = error.serverInfo?[.sqlState] else { return false }
        return state == "53300" || state == "57P03"
    }

    /// Whether `error`, as postgres-nio's or as jobq's, says the server is out of reach.
    static func isOutage(_ error: any Error) -> Bool {
        isConnectionLost(error) || isRefusedForNow(error) || StoreErrorKind.isOutage(error)
    }

    /// A connection in use was lost (`name` says which; `error` is why, nil when it was found
    /// closed while idle), or a connect failed with `error`:
    /// warns if this begins an outage, or if one goes on ``quietPeriod`` after its warning.
    /// Refusals for too many connections come and go with the other processes' connects: a new
    /// one within ``quietPeriod`` of a warning goes unsaid.
    /// `opened`: when the lost connection was opened. One opened before the last outage ended
    /// was cut by it, found only now (a connection idle since): that outage was said.
    static func noteFailure(
        _ error: (any Error)?, connection name: String?, opened: ContinuousClock.Instant?, logger: Logger,
        settings: PostgresSettings
    ) {
        let now = ContinuousClock.now
        let refused = error.map(isRefusedForNow) ?? false
        let reason = error.map(PostgresConnector.explain) ?? "closed while idle"
        let (began, warn) = reach.withLock { reach -> (ContinuousClock.Instant?, Bool) in
            var state = reach[key(settings)] ?? Reach()
            defer { reach[key(settings)] = state }
            if state.since == nil, let opened, let ended = state.ended, opened < ended { return (nil, false) }
            let began = state.since
            let recentlyWarned = state.warned.map { now - $0 < quietPeriod } ?? false
            if began == nil {
                state.since = now
                state.said = false
            }
            guard began == nil ? !(refused && recentlyWarned) : !recentlyWarned else { return (began, false) }
            state.warned = now
            state.said = true
            return (began, true)
        }
        logger.debug("PostgreSQL connection \(name ?? "connect") failed: \(reason)")
        guard warn else { return }
        if let began {
            logger.warning(
                "PostgreSQL at \(settings) is still out of reach after \(said(now - began)) (\(reason)); still retrying"
            )
        } else if refused {
            logger.warning(
                "PostgreSQL at \(settings) refuses new connections for now: \(reason); retrying with backoff (each connect for up to \(DurationParser.format(RefusalWait.limit))), and saying nothing more until one opens"
            )
        } else {
            let what =
                name.map { "lost the connection \($0) to PostgreSQL at \(settings)" }
                ?? "cannot reach PostgreSQL at \(settings)"
            logger.warning(
                "\(what) (\(reason)); reconnecting with backoff (each connect for up to \(DurationParser.format(RefusalWait.limit))). Jobs in hand stay held and their outcomes are written once it answers; saying nothing more until it does"
            )
        }
    }

    /// A connection opened: if an outage was said, says that it is over and how long it lasted.
    static func noteConnected(logger: Logger, settings: PostgresSettings) {
        let now = ContinuousClock.now
        let since = reach.withLock { reach -> ContinuousClock.Instant? in
            var state = reach[key(settings)] ?? Reach()
            defer { reach[key(settings)] = state }
            state.connected = true
            guard let since = state.since else { return nil }
            state.since = nil
            state.ended = now
            return state.said ? since : nil
        }
        guard let since else { return }
        logger.notice(
            "PostgreSQL at \(settings) accepts connections again (out of reach for \(said(now - since)))")
    }

    /// Whether the server is out of reach now, or was within `window` before now.
    static func outOfReach(within window: Duration, settings: PostgresSettings) -> Bool {
        let now = ContinuousClock.now
        return reach.withLock { reach in
            guard let state = reach[key(settings)] else { return false }
            if state.since != nil { return true }
            return state.ended.map { now - $0 < window } ?? false
        }
    }

    /// A duration to a tenth of a second (from a millisecond up).
    private static func said(_ duration: Duration) -> String {
        let tenths = (duration.inSeconds * 10).rounded()
        return DurationParser.format(tenths == 0 ? .milliseconds(1) : .milliseconds(Int64(tenths) * 100))
    }
}
