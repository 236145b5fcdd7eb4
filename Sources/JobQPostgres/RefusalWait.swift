import Foundation
import JobQCore
import Logging
import PostgresNIO
import Synchronization

/// A connect that the server refuses for now (it has too many connections, SQLSTATE 53300:
/// `max_connections`, or a role's or database's CONNECTION LIMIT; or it is starting up,
/// 57P03) is tried again with backoff for up to ``limit``, instead of failing whatever asked
/// for the connection. Such refusals come in crowds (forty workers starting at once, each
/// opening its connections as it needs them), so a process warns once when its first connect
/// is refused, says at `info` when connections open again, and warns again only if refused
/// again after ``quietPeriod``; its other connects wait quietly meanwhile.
struct RefusalWait {
    /// How long one connect waits out refusals before it fails.
    static let limit: Duration = .seconds(60)
    private static let firstPause: Duration = .milliseconds(50)
    private static let longestPause: Duration = .seconds(2)
    /// After a warning, how long further refusals go unsaid.
    static let quietPeriod: Duration = .seconds(300)

    /// Per store (by URL): since when this process is being refused (nil while it is not), and
    /// when it last warned.
    private struct Refusals {
        var since: ContinuousClock.Instant?
        var warned: ContinuousClock.Instant?
    }
    private static let refused = Mutex<[String: Refusals]>([:])

    let connector: PostgresConnector
    private var started: ContinuousClock.Instant?
    private var pauses = 0

    init(connector: PostgresConnector) {
        self.connector = connector
    }

    /// Whether `error` is the server refusing a connection for now.
    static func isRefusedForNow(_ error: any Error) -> Bool {
        guard let error = error as? PSQLError, let state = error.serverInfo?[.sqlState] else { return false }
        return state == "53300" || state == "57P03"
    }

    /// How long to wait before trying again after `error`; nil when the connect should fail
    /// now (another error, or refused for longer than ``limit``).
    mutating func pause(after error: any Error) -> Duration? {
        guard Self.isRefusedForNow(error) else { return nil }
        let now = ContinuousClock.now
        let started = self.started ?? now
        self.started = started
        guard now - started < Self.limit else { return nil }
        let key = "\(connector.settings)"
        let warn = Self.refused.withLock { refused in
            var store = refused[key] ?? Refusals()
            defer { refused[key] = store }
            guard store.since == nil else { return false }
            store.since = now
            if let warned = store.warned, now - warned < Self.quietPeriod { return false }
            store.warned = now
            return true
        }
        if warn {
            connector.logger.warning(
                "PostgreSQL at \(connector.settings) refuses new connections for now: \(PostgresConnector.explain(error)); retrying with backoff (each connect for up to \(DurationParser.format(Self.limit))), and saying nothing more until one opens"
            )
        }
        pauses += 1
        let doubled = Self.firstPause * (1 << min(pauses - 1, 6))
        // Jitter, so that the processes refused together do not all come back together.
        return min(Self.longestPause, doubled) * Double.random(in: 0.5...1.0)
    }

    /// A connection opened: if this process was being refused, it says that this is over.
    func connected() {
        let key = "\(connector.settings)"
        guard
            let since = Self.refused.withLock({ refused -> ContinuousClock.Instant? in
                defer { refused[key]?.since = nil }
                return refused[key]?.since
            })
        else { return }
        connector.logger.info(
            "PostgreSQL at \(connector.settings) accepts connections again (refused for \(DurationParser.format(ContinuousClock.now - since)))"
        )
    }
}
