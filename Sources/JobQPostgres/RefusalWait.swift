import Foundation
import JobQCore
import Logging
import PostgresNIO

/// A connect that may work if tried again is tried again with backoff for up to ``limit``,
/// instead of failing whatever asked for the connection: the server refuses connections for
/// now (SQLSTATE 53300, too many connections: `max_connections`, or a role's or database's
/// CONNECTION LIMIT; 57P03, starting up or shutting down), or, in a process that was connected
/// before, the server does not answer (a restart, a failover, a network cut). What is logged
/// is ``ServerOutage``'s: once per outage, not once per connect.
struct RefusalWait {
    /// How long one connect waits before it fails.
    static let limit: Duration = .seconds(60)
    private static let firstPause: Duration = .milliseconds(50)
    private static let longestPause: Duration = .seconds(2)

    let connector: PostgresConnector
    private var started: ContinuousClock.Instant?
    private var pauses = 0

    init(connector: PostgresConnector) {
        self.connector = connector
    }

    /// How long to wait before trying again after `error`; nil when the connect should fail
    /// now (another error, or one that lasted longer than ``limit``).
    mutating func pause(after error: any Error) -> Duration? {
        guard ServerOutage.connectMayWork(after: error, settings: connector.settings) else { return nil }
        let now = ContinuousClock.now
        let started = self.started ?? now
        self.started = started
        guard now - started < Self.limit else { return nil }
        ServerOutage.noteFailure(
            error, connection: nil, opened: nil, logger: connector.logger, settings: connector.settings)
        pauses += 1
        let doubled = Self.firstPause * (1 << min(pauses - 1, 6))
        // Jitter, so that the processes refused together do not all come back together.
        return min(Self.longestPause, doubled) * Double.random(in: 0.5...1.0)
    }

    /// A connection opened.
    func connected() {
        ServerOutage.noteConnected(logger: connector.logger, settings: connector.settings)
    }
}
