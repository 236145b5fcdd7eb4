/// When a ``WorkerPool`` returns from `run()` on its own, besides shutdown.
public enum StopCondition: Sendable, Hashable {
    /// Run until shut down.
    case never
    /// Return once no job on the pool's queues is ready or running. Jobs scheduled for later
    /// (delayed, or failed and waiting for a retry) do not keep the pool alive.
    case queuesEmpty
    /// Return once every job on the pool's queues is final (succeeded, dead or cancelled),
    /// waiting for delayed jobs and retries.
    case allJobsFinished
}

extension WorkerPool {
    /// Tuning for a ``WorkerPool``. The defaults suit most work.
    ///
    /// ```swift
    /// var options = WorkerPool.Options()
    /// options.lease = .seconds(10)
    /// options.retryBackoff = RetryBackoff(base: .milliseconds(200))
    /// ```
    public struct Options: Sendable {
        /// How long a claimed job stays owned without a heartbeat. The pool renews leases every
        /// third of this (at least every 5 seconds); when a worker dies or hangs, its jobs run
        /// again after at most this long. A running job cancelled with ``JobQueue/cancel(_:)``
        /// is stopped at the next renewal.
        public var lease: Duration = .seconds(30)
        /// How often an idle pool checks the store for work written by other processes, and
        /// how often it checks for expired leases of other workers.
        public var pollInterval: Duration = .milliseconds(50)
        /// On graceful shutdown, how long running jobs get to finish before they are cancelled
        /// and released (back to `ready`, the attempt not counted).
        public var shutdownGracePeriod: Duration = .seconds(10)
        /// After a timeout, a cancellation or the end of the shutdown grace, how long the pool
        /// waits for the stopped executor to return before it records the outcome: a `shell`
        /// job's process group gets SIGTERM, SIGKILL after its grace (5 seconds), and is gone
        /// within this, so a retry never starts beside it. An executor that ignores cancellation
        /// is waited for this long, then left behind (its late result is discarded).
        public var cancellationGracePeriod: Duration = .seconds(10)
        /// The wait between a failed attempt and the next one.
        public var retryBackoff = RetryBackoff()
        /// When `run()` returns on its own.
        public var stopWhen: StopCondition = .never
        /// How many times a job may snooze (``Snooze``, ``ContinueLater``) before it is dead.
        public var maximumSnoozes = 100
        /// The shortest time between two stored progress reports of one job.
        public var progressInterval: Duration = .milliseconds(250)
        /// The most jobs the pool claims beyond its free slots, so that one claim transaction
        /// serves several jobs. The pool claims ahead only as many as its slots get through in
        /// about 50ms (measured), so long jobs are not held back from other workers. Claimed-ahead
        /// jobs wait in the pool (leased, renewed, released at shutdown), and the pool claims more
        /// when half of them have started; 0 claims only what can start at once. A claimed-ahead
        /// job has not started: if the process is killed it runs again after its lease without
        /// having used an attempt. Default 1024: on short jobs, fewer and larger claim
        /// transactions write each page of the jobs table and its indexes to the WAL fewer times,
        /// and the half left when the pool claims more lasts longer than the claim takes
        /// (measurements in `docs/performance.md`).
        public var prefetch = 1024
        /// After starting this many jobs, stop claiming, finish what runs, release what was
        /// claimed ahead, and return (like a worker that is recycled every N jobs). nil: no limit.
        public var maximumJobs: Int?
        /// How often an idle pool on a file store checks, with `PRAGMA data_version`, whether
        /// another process committed something, where the OS does not report writes to the
        /// store's file. Where it does (inotify on Linux, kqueue on macOS), another process's
        /// commit wakes the pool at once, and this check runs at most every 100ms, as a safety net.
        public var changeCheckInterval: Duration = .milliseconds(2)
        /// How often the pool checks whether a running job was cancelled (by any process).
        public var cancellationCheckInterval: Duration = .milliseconds(500)
        /// Whether the pool also runs the scheduler: it makes the jobs of schedules'
        /// occurrences as they come due (``JobQueue/addSchedule(_:)``). On by default; any number
        /// of pools may run it, since an occurrence makes one job.
        public var runsScheduler = true
        /// How often the pool runs the cleaner (``JobQueue/clean(batch:pause:)``), which
        /// deletes finished jobs and events past their retention; the first pass a few seconds
        /// after start. At most one pool per store cleans at a time (a lease). nil: never.
        public var cleanerInterval: Duration? = .seconds(60)
        /// How often the pool adds what it ran to the store's history (``JobQueue/history(over:buckets:queue:executor:)``),
        /// and at most how much of it a SIGKILL loses; one pool per store also samples the
        /// backlog about once a minute. nil: the pool records no history.
        public var historyInterval: Duration? = .seconds(10)
        /// How often the pool reads the store's job counts per queue and state into the
        /// `jobq_queue_jobs` gauge, when a swift-metrics backend is bootstrapped (one grouped
        /// count of the jobs table per read). nil: never.
        public var backlogMetricsInterval: Duration? = .seconds(15)

        public init() {}
    }

    /// Counts of what this pool has done since it started.
    public struct Statistics: Sendable, Hashable {
        public var succeeded = 0
        /// Attempts that failed and will be retried.
        public var retried = 0
        /// Jobs that failed for good.
        public var dead = 0
        /// Jobs handed back unfinished at shutdown, without using an attempt.
        public var released = 0
        /// Outcomes the store refused because the job was no longer this pool's (cancelled by
        /// an operator, or taken over after the lease expired).
        public var refused = 0
        /// Jobs handed back by their executor to run again later (``Snooze``, ``ContinueLater``).
        public var snoozed = 0
        /// Jobs running now.
        public var running = 0

        public var finished: Int { succeeded + dead }
    }
}
