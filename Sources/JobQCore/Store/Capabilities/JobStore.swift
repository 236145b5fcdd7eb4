import Foundation

/// Jobs and the worker's hot path: enqueueing, reading and changing jobs, claiming them,
/// recording how attempts end, and the leases and worker rows that fence those records.
///
/// A worker's completion batcher and its progress reports need nothing else of a store:
/// ```swift
/// let refused = try await jobs.recordOutcomes([(job, .succeeded(resultJSON: "{}", writes: []))], workerID: id)
/// ```
package protocol JobStore: AnyObject, Sendable {
    func enqueue(_ requests: [JobRequest]) async throws -> [Enqueued]
    func job(_ id: JobID) async throws -> Job?
    /// The jobs `filter` matches, one page in id order.
    func jobs(where filter: JobFilter, page: JobPage) async throws -> [Job]
    func countJobs(where filter: JobFilter) async throws -> Int
    /// The ids of ``jobs(where:page:)``, read without holding up writers.
    func jobIDs(where filter: JobFilter, page: JobPage) async throws -> [JobID]
    /// One batch of a bulk action, in one transaction: of `ids`, the jobs `filter` still
    /// matches, each acted on as the one-job action would; `report` with them added.
    func perform(_ action: BulkAction, on ids: [JobID], where filter: JobFilter, into report: BulkActionReport)
        async throws -> BulkActionReport
    /// Writes the event that records a finished bulk action.
    func recordBulkAction(_ report: BulkActionReport) async throws
    func cancel(_ id: JobID) async throws -> Job
    func retry(_ id: JobID) async throws -> Job
    func delete(_ id: JobID) async throws

    func claim(queues: [String], limit: Int, workerID: String, lease: Duration, startingNow: Int) async throws
        -> [ClaimedJob]
    /// What is paused in every queue (``PausedClaims``): one small read.
    func pausedClaims() async throws -> PausedClaims
    /// Whether a claim would find a job now, and when the next scheduled job falls due.
    func claimOutlook(queues: [String]) async throws -> ClaimOutlook
    /// The same, on the calling thread, if it can be had without waiting; nil otherwise (the
    /// caller then claims, or looks with ``claimOutlook(queues:)``).
    func claimOutlookHere(queues: [String]) -> ClaimOutlook?
    func hasUnfinishedWork(queues: [String], includingFuture: Bool) async throws -> Bool
    func recordOutcomes(
        _ outcomes: [(job: ClaimedJob, outcome: AttemptOutcome)], starting: [ClaimedJob], workerID: String
    ) async throws -> (outcomes: Set<JobID>, starts: Set<JobID>)
    /// Whether ``recordOutcomes(_:starting:workerID:claiming:)`` claims in the completions'
    /// transaction; when false the worker claims in transactions of its own only.
    var claimsWithCompletions: Bool { get }
    /// Records outcomes and starts as ``recordOutcomes(_:starting:workerID:)`` does and, in the same
    /// transaction, claims as ``claim(queues:limit:workerID:lease:startingNow:)`` does. A claim
    /// that fails is undone alone and reported; it never undoes the completions.
    func recordOutcomes(
        _ outcomes: [(job: ClaimedJob, outcome: AttemptOutcome)], starting: [ClaimedJob], workerID: String,
        claiming: ClaimRequest
    ) async throws -> CompletionReport
    func recordProgress(job: ClaimedJob, workerID: String, fraction: Double?, message: String?, dataJSON: String?)
        async throws
    func renewLeases(_ ids: [JobID], workerID: String, lease: Duration) async throws -> Set<JobID>
    func lostJobs(_ ids: [JobID], workerID: String) async throws -> Set<JobID>
    func reclaimExpiredLeases() async throws -> Int
    /// Ends jobs whose deadline to start (``JobOptions/expiresAt``) passed, but those in
    /// `skipping`; says how many, and which the store refused to end.
    func expireOverdueJobs(skipping: Set<JobID>) async throws -> ExpirySweep
    func registerWorker(id: String, queues: [String], concurrency: Int) async throws
    func heartbeatWorker(id: String) async throws
    func removeWorker(id: String) async throws
}

extension JobStore {
    /// A store claims in transactions of its own unless it says otherwise.
    package var claimsWithCompletions: Bool { false }

    /// Without a claim of its own: the completions alone, and no jobs claimed.
    package func recordOutcomes(
        _ outcomes: [(job: ClaimedJob, outcome: AttemptOutcome)], starting: [ClaimedJob], workerID: String,
        claiming: ClaimRequest
    ) async throws -> CompletionReport {
        let refused = try await recordOutcomes(outcomes, starting: starting, workerID: workerID)
        return CompletionReport(refusedOutcomes: refused.outcomes, refusedStarts: refused.starts)
    }

    package func claim(queues: [String], limit: Int, workerID: String, lease: Duration) async throws -> [ClaimedJob] {
        try await claim(queues: queues, limit: limit, workerID: workerID, lease: lease, startingNow: .max)
    }

    @discardableResult
    package func recordOutcomes(_ outcomes: [(job: ClaimedJob, outcome: AttemptOutcome)], workerID: String) async throws
        -> Set<JobID>
    {
        try await recordOutcomes(outcomes, starting: [], workerID: workerID).outcomes
    }
}
