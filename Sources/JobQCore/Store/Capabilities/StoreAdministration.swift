import Foundation

/// What operators change and read about a store as a whole: queues' settings (paused, limits,
/// retention), the cleaner and pruning, counts and throughput, and data migrations.
///
/// ```swift
/// try await administration.setLimits(QueueLimits(concurrency: 3), for: "mail")
/// let status = try await administration.status(liveWithin: 30)
/// ```
package protocol StoreAdministration: AnyObject, Sendable {
    /// The file the store lives in; nil for a store in memory or on a server.
    var path: String? { get }

    /// Pauses or resumes claims of a queue's jobs, an executor's (in every queue), or all.
    func setPaused(_ target: PauseTarget, paused: Bool) async throws
    func setLimits(_ limits: QueueLimits, for queue: String) async throws
    /// An expression index on a payload member (a JSON pointer), and its record; the existing
    /// one when there is one already.
    func addPayloadIndex(_ pointer: String) async throws -> PayloadIndex
    func removePayloadIndex(_ pointer: String) async throws
    func payloadIndexes() async throws -> [PayloadIndex]
    func limitUsage(of queue: String, partitions: Int) async throws -> QueueLimitUsage?
    func status(liveWithin: TimeInterval) async throws -> StoreStatus
    func backlog(queues: [String]) async throws -> Int
    func throughput(of queues: [String], since start: Date, interval: Double, buckets: Int) async throws
        -> [QueueThroughput]

    /// Records a new token of the HTTP API by the hash of its secret; refuses a name that a
    /// token not revoked has.
    func addAPIToken(_ token: APIToken, hash: String) async throws
    func apiTokens() async throws -> [APIToken]
    func revokeAPIToken(named name: String, at time: Date) async throws -> APIToken
    /// The token whose secret hashes to `hash` (revoked or not), noting its use; nil for none.
    func apiToken(hash: String, usedAt now: Date) async throws -> APIToken?

    /// Adds workers' minutes to the history (``History``).
    func addHistory(_ minutes: [HistoryMinute]) async throws
    /// Samples the unfinished jobs by queue and state as the backlog of `minute`.
    func sampleBacklog(minute: Int64) async throws
    func cleanHistory(beforeMinute minute: Int64) async throws
    func history(from start: Date, bucketSeconds: Double, buckets: Int, queue: String?, executor: String?)
        async throws -> History

    /// Ends dead the unfinished jobs of `queue` whose payload no store can read back.
    func endUnreadableJobs(queue: String) async throws -> [JobID]

    func setRetention(_ retention: QueueRetention?, for queue: String, states: Set<JobState>) async throws
    func retentionSettings() async throws -> (store: StoreRetention, queues: [String: QueueRetention])
    func setDefaultRetention(_ retention: StoreRetention) async throws
    func retentionByQueue() async throws -> [(queue: String, retention: QueueRetention)]
    /// Takes or renews the lease `name` for `holder` (the cleaner's one-at-a-time rule); false
    /// while another holder's lease is current.
    func acquireLease(_ name: String, holder: String, for duration: Duration) async throws -> Bool
    func releaseLease(_ name: String, holder: String) async throws
    func cleanFinished(queue: String, state: JobState, finishedBefore cutoff: Double, limit: Int) async throws -> Int
    func keptForReferences(queue: String, state: JobState, finishedBefore cutoff: Double) async throws -> Int
    func cleanEvents(before cutoff: Double, limit: Int) async throws -> Int
    func cleanFinishedWorkflows(finishedBefore cutoff: Double) async throws
    func prune(finishedBefore cutoff: Date, states: Set<JobState>) async throws -> Int

    /// Copies the whole store into `destination`, an empty store or one this copy began
    /// (``JobQueue/copy(to:options:progress:)``).
    func copyEverything(
        to destination: any Store, options: StoreCopyOptions, progress: @escaping @Sendable (StoreCopyProgress) -> Void
    ) async throws -> StoreCopyReport
    /// What the store records of the copy that filled it; nil for a store not filled by a copy.
    func copyRecord() async throws -> StoreCopyRecord?

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
