import Foundation

/// Where jobq keeps everything durable: jobs, events, workflows, trees, schedules, triggers,
/// batches, tracking sets, workers and data migrations.
///
/// Every durable state change is one method and one transaction, with all its consequences (a
/// dependent unlocked, a group or tree completed, a schedule advanced, an event written) in
/// that same transaction. `JobQueue`, `WorkerPool`, workflows, schedules and the CLI talk to
/// this protocol only. Each store is a module of its own: `SQLiteStore` in `JobQSQLite`, and
/// `ServerStore` over PostgreSQL in `JobQPostgres`; nothing above this seam knows which one it
/// uses, and the core imports neither GRDB nor postgres-nio.
///
/// Times are wall-clock `Date`s or Unix seconds, as each method says.
package protocol Store: AnyObject, Sendable {
    /// The file the store lives in; nil for a store in memory or on a server.
    var path: String? { get }

    // MARK: Change notification

    /// Calls `observer` after every transaction this process commits to the store (event feeds
    /// wake on it). Returns a token for ``removeCommitObserver(_:)``.
    func addCommitObserver(_ observer: @escaping @Sendable () -> Void) -> UUID
    func removeCommitObserver(_ token: UUID)
    /// What reports other processes' commits that matter to `interest`, or nil when no other
    /// process can reach the store (a store in memory).
    func otherCommitsWatch(for interest: CommitInterest) -> (any OtherCommitsWatch)?

    // MARK: Jobs

    func enqueue(_ requests: [JobRequest]) async throws -> [Enqueued]
    func job(_ id: JobID) async throws -> Job?
    func jobs(queue: String?, state: JobState?, limit: Int, afterID: JobID?) async throws -> [Job]
    func cancel(_ id: JobID) async throws -> Job
    func retry(_ id: JobID) async throws -> Job
    func setPaused(_ queue: String, paused: Bool) async throws
    func setLimits(_ limits: QueueLimits, for queue: String) async throws
    func limitUsage(of queue: String, partitions: Int) async throws -> QueueLimitUsage?

    // MARK: Retention

    func setRetention(_ retention: QueueRetention?, for queue: String) async throws
    func retentionSettings() async throws -> (store: StoreRetention, queues: [String: QueueRetention])
    func setDefaultRetention(_ retention: StoreRetention) async throws
    func acquireLease(_ name: String, holder: String, for duration: Duration) async throws -> Bool
    func releaseLease(_ name: String, holder: String) async throws
    func retentionByQueue() async throws -> [(queue: String, retention: QueueRetention)]
    func cleanFinished(queue: String, state: JobState, finishedBefore cutoff: Double, limit: Int) async throws -> Int
    func keptForReferences(queue: String, state: JobState, finishedBefore cutoff: Double) async throws -> Int
    func cleanEvents(before cutoff: Double, limit: Int) async throws -> Int
    func cleanFinishedWorkflows(finishedBefore cutoff: Double) async throws
    func prune(finishedBefore cutoff: Date, states: Set<JobState>) async throws -> Int
    func status(liveWithin: TimeInterval) async throws -> StoreStatus
    func backlog(queues: [String]) async throws -> Int
    func jobs(matching query: JobQuery) async throws -> [Job]
    func delete(_ id: JobID) async throws
    func throughput(of queues: [String], since start: Date, interval: Double, buckets: Int) async throws
        -> [QueueThroughput]

    // MARK: The worker's hot path

    func claim(queues: [String], limit: Int, workerID: String, lease: Duration, startingNow: Int) async throws
        -> [ClaimedJob]
    /// Whether a claim would find a job now, and when the next scheduled job falls due.
    func claimOutlook(queues: [String]) async throws -> ClaimOutlook
    /// The same, on the calling thread, if it can be had without waiting; nil otherwise (the
    /// caller then claims, or looks with ``claimOutlook(queues:)``).
    func claimOutlookHere(queues: [String]) -> ClaimOutlook?
    func hasUnfinishedWork(queues: [String], includingFuture: Bool) async throws -> Bool
    func complete(
        _ outcomes: [(job: ClaimedJob, outcome: AttemptOutcome)], starting: [ClaimedJob], workerID: String
    ) async throws -> (outcomes: Set<JobID>, starts: Set<JobID>)
    func recordProgress(job: ClaimedJob, workerID: String, fraction: Double?, message: String?, dataJSON: String?)
        async throws
    func renewLeases(_ ids: [JobID], workerID: String, lease: Duration) async throws -> Set<JobID>
    func lostJobs(_ ids: [JobID], workerID: String) async throws -> Set<JobID>
    func reclaimExpiredLeases() async throws -> Int
    func registerWorker(id: String, queues: [String], concurrency: Int) async throws
    func heartbeatWorker(id: String) async throws
    func removeWorker(id: String) async throws

    // MARK: Events

    func events(after cursor: Int64, filter: EventFilter, limit: Int) async throws -> [JobEvent]
    /// The newest event id and, from the same snapshot, the matches after `cursor`.
    func eventsUpToNewest(after cursor: Int64, filter: EventFilter, limit: Int) async throws -> (
        newest: Int64, events: [JobEvent]
    )
    func latestEventID() async throws -> Int64

    // MARK: Batches and tracking sets

    func createBatch(_ name: String, onComplete: JobRequest?, onSuccess: JobRequest?) async throws -> BatchStatus
    func closeBatch(_ name: String) async throws -> BatchStatus
    func batch(_ name: String) async throws -> BatchStatus?
    func batches(limit: Int) async throws -> [BatchStatus]
    func addTrackingSet(_ name: String, members: [TrackingMember]) async throws -> TrackingSetStatus
    func removeTrackingSet(_ name: String) async throws
    func trackingSets() async throws -> [TrackingSetStatus]

    // MARK: Workflows, lanes and trees

    func submit(_ workflow: Workflow) async throws -> WorkflowID
    func workflow(_ id: WorkflowID) async throws -> WorkflowStatus?
    func workflows(state: WorkflowState?, limit: Int, before: WorkflowID?) async throws -> [WorkflowSummary]
    func cancelWorkflow(_ id: WorkflowID, group: String?) async throws -> WorkflowStatus
    func lane(_ name: String) async throws -> LaneStatus?
    func resumeLane(_ name: String) async throws -> LaneStatus

    // MARK: Schedules and triggers

    func addSchedule(_ schedule: Schedule, now: Date) async throws -> ScheduleStatus
    func schedule(_ name: String) async throws -> ScheduleStatus?
    func schedules() async throws -> [ScheduleStatus]
    func scheduleRuns(_ name: String, limit: Int) async throws -> [Job]
    func setSchedulePaused(_ name: String, paused: Bool, now: Date) async throws -> ScheduleStatus
    func removeSchedule(_ name: String, now: Date) async throws
    func runDueSchedules(now: Date) async throws -> [JobID]
    func nextScheduledOccurrence() async throws -> Date?
    func addTrigger(_ trigger: Trigger, now: Date) async throws -> TriggerStatus
    func triggers(event: String?) async throws -> [TriggerStatus]
    func setTriggerPaused(event: String, task: String, paused: Bool, now: Date) async throws -> TriggerStatus
    func removeTrigger(event: String, task: String, now: Date) async throws
    func emit(event: String, payloadJSON: String, dedupe: String?, now: Date) async throws -> Emitted

    // MARK: Data migrations

    func dataMigrationVersion(_ name: String) async throws -> Int?
    func noteDataMigrationTarget(_ name: String, target: Int) async throws
    func dataMigrators() async throws -> [DataMigratorStatus]
    func unfinishedDataMigrationJob(_ name: String) async throws -> JobID?
    /// Records step `version` of a data migration, enqueues `next` (the job for the following
    /// step) and runs `changes`, all in one transaction; nil when another run had recorded it.
    func recordDataMigrationStep<T: Sendable>(
        name: String, version: Int, outcome: String, target: Int, next: JobRequest?,
        changes: @escaping @Sendable (DataMigrationTransaction) throws -> T
    ) async throws -> T?
}

extension Store {
    package func claim(queues: [String], limit: Int, workerID: String, lease: Duration) async throws -> [ClaimedJob] {
        try await claim(queues: queues, limit: limit, workerID: workerID, lease: lease, startingNow: .max)
    }

    @discardableResult
    package func complete(_ outcomes: [(job: ClaimedJob, outcome: AttemptOutcome)], workerID: String) async throws
        -> Set<JobID>
    {
        try await complete(outcomes, starting: [], workerID: workerID).outcomes
    }
}

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
    package func run(
        pollInterval: Duration, isBusy: @escaping @Sendable () -> Bool,
        onReport: @escaping @Sendable (CommitReport) -> Void
    ) async {
        await run(pollInterval: pollInterval, isBusy: isBusy) { onReport(.seen) }
    }
}
