import Foundation
import JobQCore
import JobQSQL
import Logging
import PostgresNIO
import Synchronization

/// One LISTEN connection per process and database: every commit watch of the process (worker
/// pools, event feeds, each dashboard live stream) subscribes to its channel here, so that 64
/// open streams hold one connection, not 64.
///
/// The connection is opened for the first subscriber and closed after the last one leaves. On
/// each connect the hub probes whether notifications arrive at all (a notification it sends
/// must come back within a second); where they do not (PgBouncer in
/// transaction pooling), every subscriber is told once and relies on its poll. It asks the
/// connection for an answer every 10 s (a LISTEN connection whose server went away hears
/// nothing and says nothing), and after a reconnect tells every subscriber once, for what it
/// may have missed.
final class PostgresNotificationHub: Sendable {
    /// The channel the probe listens on.
    static let probeListenChannel = "jobq_probe"

    struct Subscriber: Sendable {
        let channel: String
        let logger: Logger
        /// A notification on the channel, with its payload; or a reconnect (notifications may
        /// have been missed), with an empty payload.
        let onNotice: @Sendable (_ payload: String) -> Void
        /// Set once the subscriber was told that notifications do not arrive.
        let warned = Flag()
    }

    private struct State {
        var subscribers: [UUID: Subscriber] = [:]
        var runner: Task<Void, Never>?
        /// Which runner is current: one cancelled late must not install its connection.
        var generation = 0
        var connection: PostgresConnection?
        var listening: Set<String> = []
        /// Whether the last probe came back; nil before the first.
        var notificationsArrive: Bool?
    }

    private let settings: PostgresSettings
    private let logger: Logger
    /// Where the probe is sent: the probe's channel, except in the test that plays a pooler
    /// which drops notifications.
    private let probeChannel: String
    private let state = Mutex(State())

    private init(settings: PostgresSettings, logger: Logger, probeChannel: String) {
        self.settings = settings
        self.logger = logger
        self.probeChannel = probeChannel
    }

    private static let hubs = Mutex<[String: PostgresNotificationHub]>([:])

    /// The process's hub for the database `settings` name (and, in tests, a probe channel).
    static func shared(settings: PostgresSettings, logger: Logger, probeChannel: String? = nil)
        -> PostgresNotificationHub
    {
        let probe = probeChannel ?? probeListenChannel
        let key = "\(settings) \(settings.timeouts.startupParameters.sorted { $0.0 < $1.0 }) \(probe)"
        return hubs.withLock { hubs in
            if let hub = hubs[key] { return hub }
            let hub = PostgresNotificationHub(settings: settings, logger: logger, probeChannel: probe)
            hubs[key] = hub
            return hub
        }
    }

    /// Subscribes to `channel` until ``unsubscribe(_:)``.
    func subscribe(_ subscriber: Subscriber) -> UUID {
        let id = UUID()
        let (listenOn, lost) = state.withLock { state -> (PostgresConnection?, Bool) in
            state.subscribers[id] = subscriber
            if state.runner == nil {
                state.generation += 1
                let generation = state.generation
                state.runner = Task { await self.run(generation: generation) }
            }
            var listenOn: PostgresConnection?
            if let connection = state.connection, !state.listening.contains(subscriber.channel) {
                state.listening.insert(subscriber.channel)
                listenOn = connection
            }
            return (listenOn, state.notificationsArrive == false)
        }
        if let listenOn { startListening(on: listenOn, channel: subscriber.channel) }
        if lost { warn(subscriber) }
        return id
    }

    func unsubscribe(_ id: UUID) {
        let (runner, connection) = state.withLock { state -> (Task<Void, Never>?, PostgresConnection?) in
            state.subscribers[id] = nil
            guard state.subscribers.isEmpty else { return (nil, nil) }
            defer {
                state.runner = nil
                state.connection = nil
                state.listening = []
                state.notificationsArrive = nil
            }
            return (state.runner, state.connection)
        }
        runner?.cancel()
        // The notification streams do not always end when their readers are cancelled; closing
        // the connection ends them for sure.
        if let connection { Self.close(connection) }
    }

    /// The LISTEN connection's settings: the server itself when the URL names it for LISTEN
    /// (behind a pooler), and its own name in `pg_stat_activity` (`<application_name>-listen`),
    /// so that an operator (and a test) can tell it from the store's connections: what it last
    /// ran is a `SELECT 1` as often as a `LISTEN`.
    private var listenSettings: PostgresSettings {
        var listening = settings.forListening
        listening.applicationName = String(settings.applicationName.prefix(56)) + "-listen"
        return listening
    }

    /// Connects, listens, probes, and checks the connection until cancelled; again after a
    /// failure.
    private func run(generation: Int) async {
        var first = true
        while !Task.isCancelled {
            var opened: ContinuousClock.Instant?
            do {
                let connection = try await PostgresConnector(settings: listenSettings, logger: logger).connect()
                opened = .now
                try await withTaskCancellationHandler {
                    try await serve(connection, reconnected: !first, generation: generation)
                } onCancel: {
                    Self.close(connection)
                }
            } catch is CancellationError {
                return
            } catch {
                if Task.isCancelled { return }
                if ServerOutage.isOutage(error) {
                    ServerOutage.noteFailure(
                        error, connection: "jobq.postgres.listen", opened: opened, logger: logger,
                        settings: listenSettings)
                } else {
                    logger.warning(
                        "listening for PostgreSQL notifications failed: \(PostgresConnector.explain(error)); retrying in 1s"
                    )
                }
                try? await Task.sleep(for: .seconds(1))
            }
            first = false
        }
    }

    private func serve(_ connection: PostgresConnection, reconnected: Bool, generation: Int) async throws {
        defer {
            state.withLock { state in
                if state.connection === connection {
                    state.connection = nil
                    state.listening = []
                }
            }
            Self.close(connection)
        }
        let probe = "probe:" + UUID().uuidString
        let heard = Flag()
        let channels = state.withLock { state -> Set<String>? in
            guard state.generation == generation, !Task.isCancelled else { return nil }
            state.connection = connection
            state.listening = Set(state.subscribers.values.map(\.channel))
            return state.listening
        }
        guard let channels else { throw CancellationError() }
        let probeListening = Flag()
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                try await connection.listen(on: Self.probeListenChannel) { notifications in
                    _ = probeListening.setForTheFirstTime()
                    for try await notification in notifications where notification.payload == probe {
                        _ = heard.setForTheFirstTime()
                    }
                }
            }
            for channel in channels { startListening(on: connection, channel: channel) }
            if reconnected { deliverToAll() }  // whatever came while the connection was down
            // A session hears only what is sent after its LISTEN: the probe waits for it (on a
            // busy machine the LISTEN can still be queued when the probe would go).
            let listenDeadline = ContinuousClock.now + .seconds(5)
            while !probeListening.isSet, ContinuousClock.now < listenDeadline {
                try await Task.sleep(for: .milliseconds(5))
            }
            if await sendProbe(probe) {
                try await Task.sleep(for: .seconds(1))
                let arrive = heard.isSet
                let subscribers = state.withLock { state in
                    state.notificationsArrive = arrive
                    return Array(state.subscribers.values)
                }
                if !arrive { for subscriber in subscribers { warn(subscriber) } }
            }
            while !Task.isCancelled {
                try await Task.sleep(for: .seconds(10))
                try await checkAlive(connection)
            }
            group.cancelAll()
        }
    }

    /// Reports every notification on `channel` to its subscribers, until the connection ends.
    private func startListening(on connection: PostgresConnection, channel: String) {
        Task {
            do {
                try await connection.listen(on: channel) { notifications in
                    for try await notification in notifications {
                        let subscribers = state.withLock { $0.subscribers.values.filter { $0.channel == channel } }
                        for subscriber in subscribers { subscriber.onNotice(notification.payload) }
                    }
                }
            } catch {
                // The connection ended: the hub connects again and listens anew.
            }
        }
    }

    private func deliverToAll() {
        let subscribers = state.withLock { Array($0.subscribers.values) }
        for subscriber in subscribers { subscriber.onNotice("") }
    }

    private func warn(_ subscriber: Subscriber) {
        guard subscriber.warned.setForTheFirstTime() else { return }
        subscriber.logger.warning(
            "PostgreSQL notifications do not arrive (a pooler in transaction mode?); looking for work on each poll")
    }

    /// Throws (after closing it) when the connection does not answer a query within the
    /// statement bound and its margin; the hub then connects again and says so in the log.
    private func checkAlive(_ connection: PostgresConnection) async throws {
        let limit = settings.timeouts.clientDeadline ?? .seconds(65)
        let logger = self.logger
        let answered = try await withThrowingTaskGroup(of: Bool.self) { group in
            group.addTask {
                try await connection.query("SELECT 1", logger: logger)
                return true
            }
            group.addTask {
                try await Task.sleep(for: limit)
                return false
            }
            let first = try await group.next() ?? false
            // A query that never answers ends only with its connection.
            if !first { Self.close(connection) }
            group.cancelAll()
            return first
        }
        if !answered {
            throw JobQueueError.storeUnavailable("the LISTEN connection did not answer within \(limit)")
        }
    }

    /// Closes `connection`, holding it until it is closed (postgres-nio requires a connection
    /// to be closed before it is released).
    private static func close(_ connection: PostgresConnection) {
        connection.close().whenComplete { _ in withExtendedLifetime(connection) {} }
    }

    /// Sent from a second connection, for a moment: behind a pooler in transaction mode a
    /// notification the LISTEN connection sent itself can come back to it (its server session
    /// is still attached when the NOTIFY commits) while others' never do, so only another
    /// connection's tells. That connection is named `<application_name>-probe` in
    /// `pg_stat_activity` and is not waited for: a server that refuses it (too many
    /// connections) leaves the question open rather than holding up the LISTEN.
    /// Returns whether the probe was sent.
    private func sendProbe(_ payload: String) async -> Bool {
        var probing = settings
        probing.applicationName = String(settings.applicationName.prefix(57)) + "-probe"
        do {
            let connection = try await PostgresConnection.connect(
                configuration: try PostgresConnector(settings: probing, logger: logger).configuration(), id: 0,
                logger: logger)
            defer { Task { try? await connection.close() } }
            try await connection.query("SELECT pg_notify(\(probeChannel), \(payload))", logger: logger)
            return true
        } catch {
            logger.debug("the LISTEN probe could not be sent: \(PostgresConnector.explain(error))")
            return false
        }
    }
}

/// A flag set once: whether a subscriber was warned that notifications do not arrive, whether
/// a probe came back.
final class Flag: Sendable {
    private let value = Mutex(false)

    var isSet: Bool { value.withLock { $0 } }

    /// Sets the flag; true only the first time.
    func setForTheFirstTime() -> Bool {
        value.withLock { set in
            defer { set = true }
            return !set
        }
    }
}
