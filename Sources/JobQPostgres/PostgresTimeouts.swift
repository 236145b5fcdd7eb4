import Foundation
import JobQCore
import JobQSQL

extension PostgresSettings {
    /// How long anything on a PostgreSQL connection may wait, so that one stuck worker (stopped
    /// with SIGSTOP in the middle of a transaction, cut off by the network) cannot hold the
    /// others up for longer than these bounds. Each is set per session when it connects, and
    /// can be changed in the URL (`?statement_timeout=2m&idle_in_transaction_session_timeout=5s`).
    ///
    /// ```swift
    /// var settings = try PostgresSettings(url: "postgres://jobq@db.internal/jobs")
    /// settings.timeouts.statement = .seconds(300)  // a long prune
    /// ```
    ///
    /// A duration of zero turns a server-side bound off, as in PostgreSQL.
    public struct Timeouts: Sendable, Hashable {
        /// The longest a statement may run on the server (`statement_timeout`). The client gives
        /// up on an answer 5 seconds after this, closes the connection and opens a new one for
        /// the next transaction: a server that went away never hangs a worker. Default 60 s.
        public var statement: Duration = .seconds(60)
        /// The longest a statement waits for a lock (`lock_timeout`); the statement then fails,
        /// and the worker retries the transaction. Default 10 s.
        public var lock: Duration = .seconds(10)
        /// The longest a session may sit inside a transaction without sending anything
        /// (`idle_in_transaction_session_timeout`): the server then ends the session, and the
        /// transaction's locks go with it. This is the bound on how long a worker stopped in
        /// the middle of a transaction holds the others up. Shorter than ``lock``, so that a
        /// session waiting behind a stopped one gets its lock rather than a timeout. jobq's own
        /// transactions never pause between statements; a data migration step that computes for
        /// long inside `context.write` needs a longer bound in its URL. Default 5 s.
        public var idleInTransaction: Duration = .seconds(5)
        /// The longest a connection attempt takes (libpq's `connect_timeout`). Default 10 s.
        public var connect: Duration = .seconds(10)
        /// TCP keepalives the server sends on each connection (`tcp_keepalives_idle`,
        /// `_interval`, `_count`): a worker whose machine went away has its session ended, and
        /// its locks released, after about idle + interval x count. Default 30 s, 10 s, 3.
        public var keepalivesIdle: Duration = .seconds(30)
        public var keepalivesInterval: Duration = .seconds(10)
        public var keepalivesCount: Int = 3

        public init() {}

        /// The session settings sent when a connection starts, as PostgreSQL spells them.
        var startupParameters: [(String, String)] {
            [
                ("statement_timeout", Self.milliseconds(statement)),
                ("lock_timeout", Self.milliseconds(lock)),
                ("idle_in_transaction_session_timeout", Self.milliseconds(idleInTransaction)),
                ("tcp_keepalives_idle", String(Self.seconds(keepalivesIdle))),
                ("tcp_keepalives_interval", String(Self.seconds(keepalivesInterval))),
                ("tcp_keepalives_count", String(keepalivesCount))
            ]
        }

        /// How long the client waits for an answer before it gives the connection up; nil when
        /// statements have no bound.
        var clientDeadline: Duration? { statement == .zero ? nil : statement + .seconds(5) }

        /// The URL parameters that differ from the defaults, for `description`.
        var urlParameters: [String] {
            let defaults = Timeouts()
            var parameters: [String] = []
            for (name, value, standard) in Self.durationParameters(self, defaults) where value != standard {
                parameters.append("\(name)=\(Self.spelled(value))")
            }
            if keepalivesCount != defaults.keepalivesCount { parameters.append("keepalives_count=\(keepalivesCount)") }
            return parameters
        }

        private static func durationParameters(_ timeouts: Timeouts, _ defaults: Timeouts) -> [(
            String, Duration, Duration
        )] {
            [
                ("statement_timeout", timeouts.statement, defaults.statement),
                ("lock_timeout", timeouts.lock, defaults.lock),
                ("idle_in_transaction_session_timeout", timeouts.idleInTransaction, defaults.idleInTransaction),
                ("connect_timeout", timeouts.connect, defaults.connect),
                ("keepalives_idle", timeouts.keepalivesIdle, defaults.keepalivesIdle),
                ("keepalives_interval", timeouts.keepalivesInterval, defaults.keepalivesInterval)
            ]
        }

        /// Reads one URL parameter; false when `name` is not one of the timeouts.
        mutating func read(_ name: String, _ value: String) throws -> Bool {
            switch name {
            case "statement_timeout": statement = try Self.duration(name, value, unitless: .milliseconds)
            case "lock_timeout": lock = try Self.duration(name, value, unitless: .milliseconds)
            case "idle_in_transaction_session_timeout":
                idleInTransaction = try Self.duration(name, value, unitless: .milliseconds)
            case "connect_timeout":
                connect = try Self.duration(name, value, unitless: .seconds)
                guard connect > .zero else {
                    throw JobQueueError.invalidInput(
                        "connect_timeout=\(value) in the PostgreSQL URL must be more than zero, e.g. 10 or 10s")
                }
            case "keepalives_idle": keepalivesIdle = try Self.wholeSeconds(name, value)
            case "keepalives_interval": keepalivesInterval = try Self.wholeSeconds(name, value)
            case "keepalives_count":
                guard let count = Int(value), (1...1000).contains(count) else {
                    throw JobQueueError.invalidInput(
                        "keepalives_count=\(value) in the PostgreSQL URL must be a whole number from 1 to 1000")
                }
                keepalivesCount = count
            default: return false
            }
            return true
        }

        /// The names ``read(_:_:)`` takes, for the error about an unknown parameter.
        static let parameterNames = [
            "statement_timeout", "lock_timeout", "idle_in_transaction_session_timeout", "connect_timeout",
            "keepalives_idle", "keepalives_interval", "keepalives_count"
        ]

        private enum Unit { case milliseconds, seconds }

        /// A duration in jobq's syntax (`30s`, `1m30s`, `500ms`); a bare number is in `unitless`
        /// (milliseconds, as PostgreSQL reads its timeouts; seconds for libpq's connect_timeout).
        private static func duration(_ name: String, _ value: String, unitless: Unit) throws -> Duration {
            let duration: Duration
            if let number = Int(value), number >= 0 {
                duration = unitless == .milliseconds ? .milliseconds(number) : .seconds(number)
            } else {
                do {
                    duration = try DurationParser.parse(value)
                } catch {
                    throw JobQueueError.invalidInput(
                        "\(name)=\(value) in the PostgreSQL URL is not a duration; write e.g. 30s, 2m or 500ms (0 turns it off)"
                    )
                }
            }
            // Bare numbers too: 10000000000 seconds would overflow the connection's clock.
            guard duration <= longest else {
                throw JobQueueError.invalidInput("\(name)=\(value) in the PostgreSQL URL is longer than a day")
            }
            return duration
        }

        /// The longest any of these may be: a day.
        static let longest: Duration = .seconds(24 * 3600)

        /// Throws when a timeout set through the API is negative or longer than a day (what the
        /// URL's parameters are held to), or the keepalive count is out of 1...1000.
        func check() throws(JobQueueError) {
            for (name, value) in [
                ("statement", statement), ("lock", lock), ("idleInTransaction", idleInTransaction),
                ("connect", connect), ("keepalivesIdle", keepalivesIdle), ("keepalivesInterval", keepalivesInterval)
            ] where value < .zero || value > Self.longest {
                throw .invalidInput(
                    "PostgresSettings.timeouts.\(name) must be from 0 to a day, got \(DurationParser.format(value))")
            }
            guard connect > .zero, keepalivesIdle >= .seconds(1), keepalivesInterval >= .seconds(1) else {
                throw .invalidInput(
                    "PostgresSettings.timeouts: connect must be more than zero and the keepalives at least 1s")
            }
            guard (1...1000).contains(keepalivesCount) else {
                throw .invalidInput("PostgresSettings.timeouts.keepalivesCount must be from 1 to 1000")
            }
        }

        private static func wholeSeconds(_ name: String, _ value: String) throws -> Duration {
            let duration = try duration(name, value, unitless: .seconds)
            guard duration >= .seconds(1), duration == .seconds(seconds(duration)) else {
                throw JobQueueError.invalidInput(
                    "\(name)=\(value) in the PostgreSQL URL must be a whole number of seconds, at least 1")
            }
            return duration
        }

        static func seconds(_ duration: Duration) -> Int64 { duration.components.seconds }

        static func milliseconds(_ duration: Duration) -> String {
            let (seconds, attoseconds) = duration.components
            return String(seconds * 1000 + attoseconds / 1_000_000_000_000_000)
        }

        private static func spelled(_ duration: Duration) -> String { milliseconds(duration) + "ms" }
    }
}
