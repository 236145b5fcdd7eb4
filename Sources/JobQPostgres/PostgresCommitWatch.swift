import Foundation
import JobQCore
import JobQSQL
import Logging

/// Reports other processes' commits on a PostgreSQL store: woken at once by the `NOTIFY` the
/// store sends in every transaction that concerns the watch's channel, through the process's one
/// LISTEN connection (``PostgresNotificationHub``), with a poll every `pollInterval` (at least a
/// second) as a fallback: notifications are lost behind PgBouncer in transaction pooling, and
/// while the connection is being re-established (after which the hub reports once).
struct PostgresCommitWatch: OtherCommitsWatch {
    let settings: PostgresSettings
    let logger: Logger
    /// The channel the store notifies (``channel(for:of:)``).
    var channel: String
    /// Where the hub's probe is sent: its own channel, except in the test that plays a pooler
    /// which drops notifications.
    var probeChannel: String?
    /// Whether the process's LISTEN connection is used (its connection budget allows one);
    /// otherwise only the poll finds other processes' commits.
    var listens = true

    /// The payload of a notification on the work channel that says only that jobs finished
    /// (for workers waiting for the queues to empty); work that may be claimable has none.
    static let finishedPayload = "finished"

    /// The channel of the store's commits that matter to `interest`: the store's own, so that
    /// a store in another schema of the database wakes nobody here.
    static func channel(for interest: CommitInterest, of names: SchemaNames) -> String {
        switch interest {
        case .claimableWork: names.workChannel
        case .events: names.eventsChannel
        }
    }

    /// The SQL that names the channel of `interest` in the store's statements (its function,
    /// made by migration 12 with ``channel(for:of:)``'s value).
    static func channelFunction(for interest: CommitInterest) -> String {
        switch interest {
        case .claimableWork: "jobq_work_channel()"
        case .events: "jobq_events_channel()"
        }
    }

    func run(pollInterval: Duration, isBusy: @escaping @Sendable () -> Bool, onCommit: @escaping @Sendable () -> Void)
        async
    {
        await run(pollInterval: pollInterval, isBusy: isBusy) { _ in onCommit() }
    }

    func run(
        pollInterval: Duration, isBusy: @escaping @Sendable () -> Bool,
        onReport: @escaping @Sendable (CommitReport) -> Void
    ) async {
        let poll = max(pollInterval, .seconds(1))
        let hub =
            listens
            ? PostgresNotificationHub.shared(settings: settings, logger: logger, probeChannel: probeChannel) : nil
        let subscription = hub?.subscribe(
            .init(channel: channel, logger: logger) { payload in
                // Jobs that finished make no work: a waiting pool looks before it claims.
                if !isBusy() { onReport(payload == Self.finishedPayload ? .seen : .announced) }
            })
        defer { if let hub, let subscription { hub.unsubscribe(subscription) } }
        // The poll, whether or not notifications arrive.
        while !Task.isCancelled {
            try? await Task.sleep(for: poll)
            if Task.isCancelled { return }
            onReport(.seen)
        }
    }
}
