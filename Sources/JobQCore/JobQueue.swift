import Foundation
import Synchronization

/// A durable job queue, stored in one SQLite file or on a PostgreSQL server.
///
/// Open it on a path (created with the current schema if new; an older schema is migrated),
/// or on a server with `JobQueue(postgres:)` from `JobQPostgres`; enqueue jobs, and run them with a ``WorkerPool``. Any number of processes may open the same
/// file: producers, workers, and the `jobq` command line.
///
/// ```swift
/// let queue = try JobQueue(path: "jobs.sqlite")
/// let job = try await queue.enqueue(Sum.self, .init(a: 1, b: 2))
/// // ... a WorkerPool runs it ...
/// let done = try await queue.job(job.id)
/// print(done?.state, try done?.result(as: Sum.Output.self))
/// ```
public final class JobQueue: Sendable {
    package let store: any Store
    /// The file the store lives in, or nil for an in-memory queue.
    public var path: String? { store.path }

    private let wakeHandlers = Callbacks()
    private let metricsHandles = Mutex<JobMetrics?>(nil)

    /// jobq's metrics on the bootstrapped swift-metrics backend, or nil while there is none
    /// (nothing is counted until one is bootstrapped; see ``JobMetrics``).
    var metrics: JobMetrics? {
        metricsHandles.withLock { handles in
            if handles == nil { handles = JobMetrics.ifBootstrapped() }
            return handles
        }
    }

    package init(store: any Store) {
        self.store = store
    }

    // MARK: Enqueueing

    /// Enqueues one job for a typed executor.
    ///
    /// ```swift
    /// let job = try await queue.enqueue(Sum.self, .init(a: 1, b: 2), options: .init(priority: 5))
    /// ```
    @discardableResult
    public func enqueue<E: Executor>(_ executor: E.Type, _ input: E.Input, options: JobOptions = .init()) async throws
        -> Job
    {
        try await enqueue(try JobRequest(executor, input, options: options))
    }

    /// Enqueues one job.
    @discardableResult
    public func enqueue(_ request: JobRequest) async throws -> Job {
        try await enqueue(contentsOf: [request])[0]
    }

    /// Enqueues many jobs in one transaction: either all are stored, or (on any error) none.
    ///
    /// ```swift
    /// let requests = try (1...1000).map { try JobRequest(Sum.self, .init(a: $0, b: $0)) }
    /// let jobs = try await queue.enqueue(contentsOf: requests)
    /// ```
    ///
    /// A request with a ``JobOptions/unique`` key that a job holds gets that job back instead of
    /// a new one; ``enqueueReportingDuplicates(contentsOf:)`` says which did.
    @discardableResult
    public func enqueue(contentsOf requests: some Sequence<JobRequest>) async throws -> [Job] {
        try await enqueueReportingDuplicates(contentsOf: requests).map(\.job)
    }

    /// Enqueues like ``enqueue(contentsOf:)`` and says, for each request, whether its unique key
    /// was already held, so that the job returned is an existing one and nothing was stored.
    ///
    /// ```swift
    /// let request = try JobRequest(Report.self, input, options: .init(unique: UniqueKey("report:42")))
    /// let outcome = try await queue.enqueueReportingDuplicates(contentsOf: [request])[0]
    /// if outcome.existed { print("job \(outcome.job.id) is already on it") }
    /// ```
    public func enqueueReportingDuplicates(contentsOf requests: some Sequence<JobRequest>) async throws -> [Enqueued] {
        let outcomes = try await store.enqueue(traced(requests))
        committed(outcomes)
        return outcomes
    }

    /// The requests as an enqueue stores them: each carries the enqueuer's trace context.
    package func traced(_ requests: some Sequence<JobRequest>) -> [JobRequest] {
        var requests = Array(requests)
        if let context = JobTracing.currentContextJSON() {
            for index in requests.indices where requests[index].traceContextJSON == nil {
                requests[index].traceContextJSON = context
            }
        }
        return requests
    }

    /// What follows the commit of an enqueue: this process's idle workers woken for new ready
    /// jobs, and the enqueue counted.
    package func committed(_ outcomes: [Enqueued]) {
        if outcomes.contains(where: { !$0.existed && $0.job.state == .ready }) { wakeWorkers() }
        metrics?.enqueued(outcomes)
    }

    // MARK: Reading

    /// The job with this id, or nil.
    public func job(_ id: JobID) async throws -> Job? {
        try await store.job(id)
    }

    /// Jobs in id order, optionally filtered by queue and state.
    ///
    /// ```swift
    /// let dead = try await queue.jobs(state: .dead, limit: 50)
    /// ```
    public func jobs(queue: String? = nil, state: JobState? = nil, limit: Int = 100, after id: JobID? = nil)
        async throws -> [Job]
    {
        guard limit >= 0 else { throw JobQueueError.invalidInput("limit must not be negative, got \(limit)") }
        let query = JobQuery(queue: queue, state: state)
        return try await store.jobs(where: query.combinedFilter, page: JobPage(limit: limit, after: id))
    }

    /// Counts per queue and state, paused flags, and the workers seen in the last `liveWithin`.
    public func status(liveWithin: Duration = .seconds(30)) async throws -> StoreStatus {
        try await store.status(liveWithin: liveWithin.inSeconds)
    }

    /// How many jobs on `queues` could be claimed now (ready, or due): a worker's backlog.
    public func backlog(queues: [String]) async throws -> Int {
        try await store.backlog(queues: queues)
    }

    // MARK: Operating

    /// Cancels a job that has not finished yet.
    ///
    /// A scheduled, ready or failed job is `cancelled` at once. A running job is marked
    /// `cancelled` now; its worker cancels the task at its next lease renewal, and any result
    /// the task still produces is discarded. A durable function that recorded a step is asked to
    /// cancel instead: it runs once more to compensate (the job returned is `ready`, or still
    /// `running`), then ends `cancelled` (<doc:DurableFunctions>).
    ///
    /// - Throws: ``JobQueueError/notFound(_:)`` for an unknown id,
    ///   ``JobQueueError/invalidState(_:)`` for a job that already finished.
    @discardableResult
    public func cancel(_ id: JobID) async throws -> Job {
        let job = try await store.cancel(id)
        // A durable function woken to compensate is ready: this process's pools learn of it now.
        if job.state == .ready { wakeWorkers() }
        return job
    }

    /// Runs a failed, dead or cancelled job again, now. A dead job gets one more attempt.
    @discardableResult
    public func retry(_ id: JobID) async throws -> Job {
        let job = try await store.retry(id)
        wakeWorkers()
        return job
    }

    /// Stops workers from claiming jobs on `queue`. Running jobs finish; jobs can still be
    /// enqueued.
    public func pause(queue: String) async throws {
        try Label.check(queue, what: "queue name")
        try await store.setPaused(.queue(queue), paused: true)
    }

    /// Lets workers claim jobs on `queue` again.
    public func resume(queue: String) async throws {
        try await store.setPaused(.queue(queue), paused: false)
        wakeWorkers()
    }

    /// Stops every worker, on every machine, from claiming jobs of `executor` in any queue, from
    /// its next claim on; jobs a worker claimed ahead and has not started are handed back within
    /// about half a second. Running jobs finish; jobs can still be enqueued; the executor's other
    /// jobs wait in their queues, which go on serving the rest.
    ///
    /// ```swift
    /// try await queue.pause(executor: "mail")     // stop sending emails now
    /// try await queue.resume(executor: "mail")
    /// ```
    public func pause(executor: String) async throws {
        try Label.check(executor, what: "executor name")
        try await store.setPaused(.executor(executor), paused: true)
    }

    /// Lets workers claim jobs of `executor` again.
    public func resume(executor: String) async throws {
        try await store.setPaused(.executor(executor), paused: false)
        wakeWorkers()
    }

    /// Stops every worker from claiming any job, until ``resumeAll()``; queue and executor pauses
    /// are kept apart and hold again after it. Running jobs finish; jobs can still be enqueued.
    ///
    /// ```swift
    /// try await queue.pauseAll()   // e.g. during a database migration
    /// ```
    public func pauseAll() async throws {
        try await store.setPaused(.all, paused: true)
    }

    /// Ends ``pauseAll()``.
    public func resumeAll() async throws {
        try await store.setPaused(.all, paused: false)
        wakeWorkers()
    }

    /// Sets `queue`'s limits, for every worker on every machine from their next claim on.
    ///
    /// ```swift
    /// try await queue.setLimits(QueueLimits(concurrency: 5), for: "payments-api")  // 5 at once
    /// try await queue.setLimits(QueueLimits(rate: RateLimit(100, per: .seconds(60))), for: "mail")
    /// try await queue.setLimits(
    ///     QueueLimits(concurrency: 2, partitionBy: .payload("/customer")), for: "reports")  // 2 per customer
    /// try await queue.setLimits(QueueLimits(), for: "payments-api")                // no limit
    /// ```
    ///
    /// A concurrency limit counts the queue's `running` jobs, those claimed ahead into a
    /// worker's buffer included, and a claim never takes more than is left. A worker that dies
    /// holding limited jobs holds their places until their leases expire and they are
    /// reclaimed. Lowering a limit below what runs stops nothing: claims wait until fewer run.
    ///
    /// A rate limit allows at most `starts` attempts to start in any span of its period (a
    /// sliding window; retries count, as they start again). Its jobs are claimed only into free
    /// slots, never ahead into a buffer, so a start is counted when it happens.
    ///
    /// With ``QueueLimits/partitionBy``, each partition gets the whole of the limits, and a
    /// partition with no place left never holds back another partition's jobs.
    /// - Throws: ``JobQueueError/invalidInput(_:)`` for a limit that would run nothing, with
    ///   nothing changed.
    public func setLimits(_ limits: QueueLimits, for queue: String) async throws {
        if let concurrency = limits.concurrency, concurrency < 1 {
            throw JobQueueError.invalidInput(
                "a concurrency limit of \(concurrency) for queue '\(queue)' would run nothing: give 1 or more, "
                    + "or no limit (nil; `--concurrency none` on the command line)")
        }
        try limits.rate?.check()
        if case .payload(let pointer) = limits.partitionBy { _ = try PayloadPointer(pointer) }
        guard !queue.isEmpty else {
            throw JobQueueError.invalidInput("the queue name is empty: name the queue whose limits to set")
        }
        try Label.check(queue, what: "queue name")
        try await store.setLimits(limits, for: queue)
        wakeWorkers()
    }

    /// `queue`'s limits (none for a queue never limited).
    public func limits(for queue: String) async throws -> QueueLimits {
        try await store.limitUsage(of: queue, partitions: 0)?.limits ?? QueueLimits()
    }

    /// What `queue`'s limits hold back now: running and waiting jobs, starts in the rate's
    /// window, and per partition the busiest `partitions`. nil for a queue with no settings.
    ///
    /// ```swift
    /// if let usage = try await queue.limitUsage(of: "reports") {
    ///     print(usage.waitingForCapacity, usage.busiestPartitions.first?.partition ?? "-")
    /// }
    /// ```
    public func limitUsage(of queue: String, partitions: Int = 10) async throws -> QueueLimitUsage? {
        try await store.limitUsage(of: queue, partitions: max(0, partitions))
    }

    /// Deletes jobs that reached one of `states` (final states only) more than `age` ago.
    /// Returns how many were deleted.
    ///
    /// ```swift
    /// let removed = try await queue.prune(olderThan: .seconds(7 * 86_400))
    /// ```
    @discardableResult
    public func prune(olderThan age: Duration, states: Set<JobState> = [.succeeded, .dead, .cancelled]) async throws
        -> Int
    {
        guard age >= .zero else { throw JobQueueError.invalidInput("prune age must not be negative") }
        if let unfinished = states.first(where: { !$0.isFinal }) {
            throw JobQueueError.invalidInput(
                "cannot prune \(unfinished.rawValue) jobs: only final states (succeeded, dead, cancelled) can be pruned"
            )
        }
        return try await store.prune(finishedBefore: Date().addingTimeInterval(-age.inSeconds), states: states)
    }

    // MARK: Wake-ups

    /// Wakes idle worker pools of this process, e.g. after an enqueue.
    package func wakeWorkers() { wakeHandlers.callAll() }

    func addWakeHandler(_ handler: @escaping @Sendable () -> Void) -> UUID { wakeHandlers.add(handler) }

    func removeWakeHandler(_ id: UUID) { wakeHandlers.remove(id) }
}
