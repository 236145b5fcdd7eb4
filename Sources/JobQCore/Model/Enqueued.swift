/// What enqueueing one request did: the job it stored, or the existing job that holds the
/// request's unique key (see ``JobOptions/unique``).
///
/// ```swift
/// for outcome in try await queue.enqueueReportingDuplicates(contentsOf: requests) where outcome.existed {
///     print("job \(outcome.job.id) already holds \(outcome.job.uniqueKey ?? "")")
/// }
/// ```
public struct Enqueued: Sendable, Hashable {
    /// The new job, or the existing one when ``existed``.
    public var job: Job
    /// True when a job already held the request's unique key: nothing was stored.
    public var existed: Bool

    public init(job: Job, existed: Bool) {
        self.job = job
        self.existed = existed
    }
}
