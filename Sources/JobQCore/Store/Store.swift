import Foundation

/// Where jobq keeps everything durable: jobs, events, workflows, trees, schedules, triggers,
/// batches, tracking sets, workers and data migrations.
///
/// Every durable state change is one method and one transaction, with all its consequences (a
/// dependent unlocked, a group or tree completed, a schedule advanced, an event written) in
/// that same transaction. `JobQueue`, `WorkerPool`, workflows, schedules and the CLI talk to
/// this protocol only, or to the capability they need: ``JobStore`` (jobs, claims and
/// completions), ``EventStore`` (the event feed and commit notices), ``WorkflowStore``
/// (workflows, lanes, trees, batches, tracking sets), ``ScheduleStore`` (schedules and
/// triggers) and ``StoreAdministration`` (queue settings, retention, counts, data migrations).
/// Each store is a module of its own: `SQLiteStore` in `JobQSQLite`, and `ServerStore` over
/// PostgreSQL in `JobQPostgres`; nothing above this seam knows which one it uses, and the core
/// imports neither GRDB nor postgres-nio.
///
/// Times are wall-clock `Date`s or Unix seconds, as each method says.
package protocol Store: JobStore, EventStore, WorkflowStore, ScheduleStore, StoreAdministration, FunctionStore {}

/// The background jobs of data migrations (``JobQueue/runDataMigration(_:waitUntilDone:queue:)``).
package enum DataMigrationStep {
    /// The executor name of a data migration's background steps; every store uses it to find
    /// a migration's unfinished job.
    package static let executorName = "jobq.data-migration"
}

/// What a watcher of other processes' commits waits for.
package enum CommitInterest: Sendable {
    /// Commits that may have made work claimable (a worker pool).
    case claimableWork
    /// Commits that wrote events (an event follower).
    case events
}

/// Who a write transaction's commit should wake in other processes, where the store can tell
/// them apart: a claim makes no work claimable, so it wakes no idle worker (which would then
/// look for work, and wake the others in turn), but its `started` events wake followers.
package enum CommitAudience: Sendable, Hashable, CaseIterable {
    case workersAndFollowers
    /// Jobs finished and nothing became claimable: followers, and workers that wait for their
    /// queues to empty (told apart where the store can, so idle workers need not claim).
    case waitingWorkersAndFollowers
    case followers
    case nobody
}

/// Reports commits to a store by other processes (``Store/otherCommitsWatch(for:)``).
package protocol OtherCommitsWatch: Sendable {
    /// Calls `onCommit` after commits by other processes until the task is cancelled. While
    /// `isBusy` says so, reports may be gathered for `pollInterval`. Where commits cannot be
    /// reported at once, they are looked for every `pollInterval`.
    func run(pollInterval: Duration, isBusy: @escaping @Sendable () -> Bool, onCommit: @escaping @Sendable () -> Void)
        async
    /// As ``run(pollInterval:isBusy:onCommit:)``, saying of each report whether a committing
    /// transaction announced it (a server's notification, sent only by commits that concern the
    /// watch's interest) or it was found otherwise (a poll, a change seen in a file).
    func run(
        pollInterval: Duration, isBusy: @escaping @Sendable () -> Bool,
        onReport: @escaping @Sendable (CommitReport) -> Void
    ) async
    /// Whether reports come on a thread that serves this watch alone and runs no Swift task
    /// meanwhile, so that the caller may do long work right in the report: a worker pool then
    /// claims and starts a job on that thread, instead of waking another for it.
    var reportsOnItsOwnThread: Bool { get }
}

/// How an ``OtherCommitsWatch`` learned of a commit.
package enum CommitReport: Sendable {
    /// The committing transaction announced it to this watch's interest: for
    /// ``CommitInterest/claimableWork``, a commit that enqueued jobs or made some ready.
    case announced
    /// A poll, or a change seen without knowing what it was.
    case seen
}

extension OtherCommitsWatch {
    package var reportsOnItsOwnThread: Bool { false }

    package func run(
        pollInterval: Duration, isBusy: @escaping @Sendable () -> Bool,
        onReport: @escaping @Sendable (CommitReport) -> Void
    ) async {
        await run(pollInterval: pollInterval, isBusy: isBusy) { onReport(.seen) }
    }
}
