import Foundation
import JobQCore
import Logging
import PostgresNIO
import Synchronization

/// Reports other processes' commits on a PostgreSQL store: LISTEN on one connection of its own,
/// woken at once by the `NOTIFY` the store sends in every transaction that makes work
/// claimable, with a poll every `pollInterval` (at least a second) as a fallback.
///
/// Notifications are lost behind PgBouncer in transaction pooling, and while a connection is
/// being re-established. So the watch probes at start: it sends a notification from a second
/// connection and waits a second for it to come back. If it does not, it logs once and reports
/// on the poll only. After a reconnect it reports once, for what it may have missed.
struct PostgresCommitWatch: OtherCommitsWatch {
    let settings: PostgresSettings
    let logger: Logger
    /// The channel the store notifies.
    var channel = PostgresCommitWatch.channel(for: .claimableWork)
    /// Where the probe is sent: the channel itself, except in the test that plays a pooler
    /// which drops notifications.
    var probeChannel: String?

    /// The channel of commits that matter to `interest`.
    static func channel(for interest: CommitInterest) -> String {
        switch interest {
        case .claimableWork: "jobq_work"
        case .events: "jobq_events"
        }
    }

    func run(pollInterval: Duration, isBusy: @escaping @Sendable () -> Bool, onCommit: @escaping @Sendable () -> Void)
        async
    {
        let poll = max(pollInterval, .seconds(1))
        let warned = Flag()
        var first = true
        while !Task.isCancelled {
            do {
                let connection = try await PostgresConnector(settings: settings, logger: logger).connect()
                defer { Task { try? await connection.close() } }
                if !first { onCommit() }  // whatever came while the connection was down
                first = false
                // The notification stream does not always end when its reader is cancelled;
                // closing the connection ends it for sure, so a stopping pool never waits here.
                try await withTaskCancellationHandler {
                    try await listen(on: connection, poll: poll, warned: warned, isBusy: isBusy, onCommit: onCommit)
                } onCancel: {
                    connection.close().whenComplete { _ in }
                }
            } catch is CancellationError {
                return
            } catch {
                if Task.isCancelled { return }
                logger.warning(
                    "listening for PostgreSQL notifications failed: \(PostgresConnector.explain(error)); retrying in 1s"
                )
                try? await Task.sleep(for: .seconds(1))
            }
        }
    }

    /// Reports each notification on `connection` (while the pool is not busy), probes whether
    /// notifications arrive at all, then reports every `poll` as well, until cancelled.
    private func listen(
        on connection: PostgresConnection, poll: Duration, warned: Flag, isBusy: @escaping @Sendable () -> Bool,
        onCommit: @escaping @Sendable () -> Void
    ) async throws {
        try await connection.listen(on: channel) { notifications in
            try await withThrowingTaskGroup(of: Void.self) { group in
                let probe = "probe:" + UUID().uuidString
                let heard = Mutex(false)
                group.addTask {
                    for try await notification in notifications {
                        if notification.payload == probe {
                            heard.withLock { $0 = true }
                        } else if !isBusy() {
                            onCommit()
                        }
                    }
                }
                try await sendProbe(probe)
                try await Task.sleep(for: .seconds(1))
                if !heard.withLock({ $0 }), warned.setForTheFirstTime() {
                    logger.warning(
                        "PostgreSQL notifications do not arrive (a pooler in transaction mode?); looking for work every \(poll)"
                    )
                }
                // The poll, whether or not notifications work. Every 10 s the connection is
                // also asked for an answer, after the poll's report so that the report keeps its
                // time: a LISTEN connection whose server went away hears nothing and says
                // nothing, so silence alone would never be noticed.
                var lastCheck = ContinuousClock.now
                while !Task.isCancelled {
                    try await Task.sleep(for: poll)
                    onCommit()
                    if ContinuousClock.now - lastCheck >= .seconds(10) {
                        try await checkAlive(connection)
                        lastCheck = ContinuousClock.now
                    }
                }
                group.cancelAll()
            }
        }
    }

    /// Throws (after closing it) when the connection does not answer a query within the
    /// statement bound and its margin; the watch then connects again and says so in the log.
    private func checkAlive(_ connection: PostgresConnection) async throws {
        let limit = settings.timeouts.clientDeadline ?? .seconds(65)
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
            if !first { connection.close().whenComplete { _ in } }
            group.cancelAll()
            return first
        }
        if !answered {
            throw JobQueueError.storeUnavailable("the LISTEN connection did not answer within \(limit)")
        }
    }

    private func sendProbe(_ payload: String) async throws {
        let connection = try await PostgresConnector(settings: settings, logger: logger).connect()
        defer { Task { try? await connection.close() } }
        try await connection.query("SELECT pg_notify(\(probeChannel ?? channel), \(payload))", logger: logger)
    }
}

/// Set once: whether the watch has warned that notifications do not arrive (once per watch,
/// across reconnects).
private final class Flag: Sendable {
    private let value = Mutex(false)

    /// Sets the flag; true only the first time.
    func setForTheFirstTime() -> Bool {
        value.withLock { set in
            defer { set = true }
            return !set
        }
    }
}
