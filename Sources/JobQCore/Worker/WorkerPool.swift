import Foundation
import Logging
import ServiceLifecycle
import Synchronization
import Tracing

/// Claims jobs from a ``JobQueue`` and runs them with registered executors, up to
/// `concurrency` at a time.
///
/// A pool is a swift-service-lifecycle `Service`: run it in a `ServiceGroup`, and SIGTERM or
/// SIGINT make it stop claiming, give running jobs ``Options/shutdownGracePeriod`` to finish,
/// then cancel the rest and release their leases without using up an attempt.
///
/// ```swift
/// let queue = try JobQueue(path: "jobs.sqlite")
/// let pool = WorkerPool(queue: queue, queues: ["default"], concurrency: 4, executors: [Sum()])
/// let group = ServiceGroup(configuration: .init(
///     services: [pool], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
/// try await group.run()
/// ```
public final class WorkerPool: Service, Sendable {
    public let queue: JobQueue
    public let queues: [String]
    public let concurrency: Int
    public let options: Options
    /// This pool's token: the lease owner written on every job it claims.
    public let workerID: String

    let executors: [String: ErasedExecutor]
    /// Names given to more than one executor: ``run()`` refuses to start with them.
    let duplicateExecutorNames: [String]
    let logger: Logger
    let signal = WakeSignal()
    /// Runs the claim loop on the store watcher's thread when that thread wakes it.
    private let wokenHere = WokenHereExecutor()
    let state = Mutex(PoolState())
    let completions: CompletionBatcher
    /// What the pool ran, until it is added to the store's history; nil when the pool records
    /// none (``Options/historyInterval`` nil), so that its attempts do not count either.
    let history: HistoryRecorder?
    /// Where counts and timings go; nil when no swift-metrics backend was bootstrapped before
    /// the pool was made.
    let metrics: JobMetrics?
    /// The tracer each attempt's span goes to; nil when none was bootstrapped before the pool
    /// was made.
    let tracer: (any Tracer)?

    /// - Parameters:
    ///   - queue: The store to work on.
    ///   - queues: The queues to claim from, in order of preference.
    ///   - concurrency: How many jobs run at once (at least 1).
    ///   - executors: The executors this pool can run; names must be unique (``run()`` throws
    ///     ``JobQueueError/invalidInput(_:)`` naming a duplicate).
    ///   - migrators: Data migrators whose background steps this pool runs (see
    ///     ``JobQueue/runDataMigration(_:waitUntilDone:queue:)``).
    ///   - options: Leases, retries, prefetch, shutdown and when to stop.
    ///   - logger: Where the pool logs what it does.
    public init(
        queue: JobQueue,
        queues: [String] = [JobOptions.defaultQueue],
        concurrency: Int = 4,
        executors: [any Executor],
        migrators: [any DataMigrator] = [],
        options: Options = Options(),
        logger: Logger = Logger(label: "jobq.worker")
    ) {
        self.queue = queue
        self.queues = queues.isEmpty ? [JobOptions.defaultQueue] : queues
        self.concurrency = max(1, concurrency)
        self.options = options
        history = options.historyInterval == nil ? nil : HistoryRecorder()
        self.logger = logger
        var registry: [String: ErasedExecutor] = [:]
        var duplicates: Set<String> = []
        for executor in executors {
            let erased = ErasedExecutor(executor)
            if registry[erased.name] != nil { duplicates.insert(erased.name) }
            registry[erased.name] = erased
        }
        duplicateExecutorNames = duplicates.sorted()
        if !migrators.isEmpty {
            let erased = migrators.map { ErasedDataMigrator($0) }
            registry[DataMigrationStep.executorName] = DataMigrationStepExecutor.make(queue: queue, migrators: erased)
        }
        self.executors = registry
        let host = ProcessInfo.processInfo.hostName
        let pid = ProcessInfo.processInfo.processIdentifier
        workerID = "\(host):\(pid):\(UUID().uuidString.prefix(8).lowercased())"
        completions = CompletionBatcher(store: queue.store, workerID: workerID, logger: logger)
        metrics = queue.metrics
        tracer = JobTracing.tracer
    }

    /// What the pool has done so far.
    public var statistics: Statistics {
        state.withLock { state in
            var stats = state.stats
            stats.running = state.active
            return stats
        }
    }

    /// Records the worker in the store. A store that refuses for a while (a database server
    /// restarting, a lock held past its timeout by a stuck session) is asked again with backoff
    /// for up to a minute, so that a worker started at the wrong moment does not exit.
    private func register() async throws {
        let giveUp = ContinuousClock.now + .seconds(60)
        var delay = Duration.milliseconds(500)
        while true {
            do {
                return try await queue.store.registerWorker(id: workerID, queues: queues, concurrency: concurrency)
            } catch let error as JobQueueError where ContinuousClock.now + delay < giveUp {
                guard case .storeUnavailable(let reason) = error else { throw error }
                logger.storeFailure(
                    .warning, error, "cannot register the worker yet (\(reason)); trying again in \(delay)")
                try await Task.sleep(for: delay)
                delay = min(delay * 2, .seconds(5))
            }
        }
    }

    /// Runs until shut down (graceful shutdown or task cancellation) or until
    /// ``Options/stopWhen`` is met.
    public func run() async throws {
        if let name = duplicateExecutorNames.first {
            throw JobQueueError.invalidInput(
                "two executors given to the worker pool are named '\(name)'; which one would run its jobs is not clear: "
                    + "give each executor type its own `static let name`")
        }
        try await register()
        completions.onRecorded { [weak self] items, refused in self?.recorded(items, refused: refused) }
        completions.claimWithCompletions(
            ask: { [weak self] in self?.claimToMakeWithCompletions() },
            handle: { [weak self] request, result in self?.claimedWithCompletions(request, result) })
        let signal = self.signal
        let alarm = SchedulerAlarm()
        let wakeID = queue.addWakeHandler {
            signal.poke(workArrived: true)
            alarm.poke()
        }
        defer { queue.removeWakeHandler(wakeID) }
        logger.info(
            "worker started",
            metadata: [
                "worker": "\(workerID)", "queues": "\(queues.joined(separator: ","))", "concurrency": "\(concurrency)"
            ])

        let runsScheduler = options.runsScheduler
        var pokeScheduler: (@Sendable () -> Void)?
        if runsScheduler { pokeScheduler = { @Sendable in alarm.poke() } }
        await withGracefulShutdownHandler {
            await withDiscardingTaskGroup { group in
                let watcher = queue.store.otherCommitsWatch(for: .claimableWork)
                // On a thread of the watch's own, the claim loop it wakes runs right there.
                let loopExecutor = watcher?.reportsOnItsOwnThread == true ? wokenHere : nil
                group.addTask { await self.maintain() }
                if runsScheduler { group.addTask { await self.runScheduler(alarm: alarm) } }
                if let interval = options.cleanerInterval { group.addTask { await self.runCleaner(every: interval) } }
                if let interval = options.historyInterval {
                    group.addTask { await self.recordHistory(every: interval) }
                }
                if let watcher {
                    let interval = options.changeCheckInterval
                    let also = pokeScheduler
                    let store = queue.store
                    let queues = self.queues
                    // Another process committed: look for claimable work right here, on the
                    // watcher's thread, and wake the claim loop ready to claim. Commits that
                    // add no claimable work (other workers' completions, this pool's own) never
                    // make it take the write lock, and wake it only when it waits for the
                    // queues to empty.
                    let wakeWithoutWork = options.stopWhen != .never
                    let concurrency = self.concurrency
                    let wake: @Sendable (Bool) -> Void = { workArrived in
                        guard let loopExecutor else { return signal.poke(workArrived: workArrived) }
                        loopExecutor.runWokenHere { signal.poke(workArrived: workArrived) }
                    }
                    group.addTask {
                        // A busy pool looks for work itself when its buffer runs low or a slot
                        // frees; its own commits (most of them, in a drain) need no wake-up each.
                        let isBusy: @Sendable () -> Bool = { [weak self] in
                            self?.state.withLock { $0.bufferedCount > 0 || $0.active >= concurrency } ?? true
                        }
                        await watcher.run(pollInterval: interval, isBusy: isBusy) { [weak self] report in
                            defer { also?() }
                            guard let outlook = store.claimOutlookHere(queues: queues) else {
                                // Not known here. A commit that announced work (jobs enqueued or
                                // made ready) is worth a claim at once; after any other report an
                                // idle claim loop looks (a read) before it claims.
                                wake(report == .announced)
                                return
                            }
                            if outlook.claimable {
                                wake(true)
                            } else {
                                self?.state.withLock { $0.nextDue = .known(outlook.nextDue) }
                                if wakeWithoutWork { wake(false) }
                            }
                        }
                    }
                }
                if let loopExecutor {
                    await WokenHereExecutor.$current.withValue(loopExecutor) {
                        await withTaskExecutorPreference(loopExecutor) { await self.claimLoop() }
                    }
                } else {
                    await self.claimLoop()
                }
                // Every outcome handed over is written before the pool reports it stopped. A
                // store that refuses them for a whole lease is given up on: by then the leases
                // have expired and another worker owns the jobs anyway.
                await self.completions.waitUntilIdle(givingUpAfter: options.lease)
                group.cancelAll()
                await self.addHistory()
            }
        } onGracefulShutdown: {
            self.beginDraining()
        }

        try? await queue.store.removeWorker(id: workerID)
        let stats = statistics
        logger.info(
            "worker stopped",
            metadata: [
                "succeeded": "\(stats.succeeded)", "dead": "\(stats.dead)", "retried": "\(stats.retried)",
                "released": "\(stats.released)"
            ])
    }

    /// Stops claiming; running jobs get the grace period, then are released.
    func beginDraining() {
        let deadline = ContinuousClock.now + options.shutdownGracePeriod
        state.withLock { state in
            if state.drainDeadline == nil { state.drainDeadline = deadline }
        }
        logger.info(
            "shutting down: no new claims; running jobs have \(DurationParser.format(options.shutdownGracePeriod)) to finish"
        )
        signal.poke()
    }
}

/// A claimed job waiting for a slot, with the race its attempt will run under.
typealias BufferedJob = (job: ClaimedJob, race: AttemptRace)

/// The pool's mutable state, behind its mutex.
struct PoolState: Sendable {
    struct RunningJob: Sendable {
        let job: ClaimedJob
        let race: AttemptRace
        var interruption: Interruption?
    }

    enum Interruption: Sendable {
        /// The pool is stopping: release the job.
        case shutdown
        /// The job is no longer this pool's (cancelled, or its lease was taken over).
        case lost
    }

    /// Claimed jobs, running or buffered: all of them hold leases this pool renews.
    var running: [JobID: RunningJob] = [:]
    /// Durable functions that parked themselves until their calls finish (their attempt ended
    /// in the call's own transaction): nothing is left to record for them.
    var parkedItself: Set<JobID> = []
    /// Claimed jobs not started yet, oldest first from `bufferStart`.
    private var buffer: [BufferedJob] = []
    private var bufferStart = 0
    /// Jobs whose task has started and whose executor has not finished (at most `concurrency`).
    var active = 0
    /// Jobs started since the pool started, for ``WorkerPool/Options/maximumJobs``.
    var started = 0
    /// How long executors take, smoothed; nil until the first one finished.
    var averageRunSeconds: Double?
    /// Queues held back after failed claims.
    var claimBackoff = ClaimBackoff()
    /// A claim is being written (the claim loop's, or one with completions): no other starts.
    var claimInFlight = false
    /// The last claim came back with fewer jobs than it asked for: the claim loop looks (a
    /// read) before it claims again.
    var lastClaimShort = false
    /// The claim loop has ended: jobs a claim hands over now are released at once.
    var claimingEnded = false

    var bufferedCount: Int { buffer.count - bufferStart }

    mutating func appendToBuffer(_ jobs: [BufferedJob]) {
        buffer += jobs
    }

    /// The next buffered job, unless the pool drains or the job limit is reached.
    mutating func takeBuffered(jobLimit: Int) -> BufferedJob? {
        guard drainDeadline == nil, started < jobLimit, bufferStart < buffer.count else { return nil }
        let job = buffer[bufferStart]
        bufferStart += 1
        if bufferStart == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            bufferStart = 0
        }
        started += 1
        return job
    }

    /// A buffered job for a new slot, if a slot is free.
    mutating func startSlot(concurrency: Int, jobLimit: Int) -> BufferedJob? {
        guard active < concurrency, let job = takeBuffered(jobLimit: jobLimit) else { return nil }
        active += 1
        return job
    }

    /// Takes the buffered jobs `leaving` picks (their executor was paused), keeping the order
    /// of the rest: the taken ones are to be released.
    mutating func takeBuffered(where leaving: (ClaimedJob) -> Bool) -> [BufferedJob] {
        let waiting = buffer[bufferStart...]
        let taken = waiting.filter { leaving($0.job) }
        guard !taken.isEmpty else { return [] }
        buffer = waiting.filter { !leaving($0.job) }
        bufferStart = 0
        return taken
    }

    /// Empties the buffer (shutdown, job limit): the jobs are to be released.
    mutating func takeAllBuffered() -> [BufferedJob] {
        defer {
            buffer.removeAll(keepingCapacity: true)
            bufferStart = 0
        }
        return Array(buffer[bufferStart...])
    }

    /// Drops a job's entry once its outcome is settled, unless the entry is a newer run's.
    mutating func forget(_ id: JobID, race: AttemptRace) {
        if running[id]?.race === race { running.removeValue(forKey: id) }
    }

    /// Records one executor's run time in the moving average.
    mutating func observeRun(seconds: Double) {
        averageRunSeconds = averageRunSeconds.map { $0 * 0.9 + seconds * 0.1 } ?? seconds
    }

    /// How many jobs to claim beyond the free slots: as many as the slots get through in about
    /// 50ms, at most `maximum`. Short jobs are claimed many per transaction; long ones are not
    /// held back from other workers.
    func prefetch(maximum: Int, concurrency: Int) -> Int {
        guard let average = averageRunSeconds else { return min(maximum, concurrency) }
        let perWindow = 0.05 / max(average, 0.000_01) * Double(concurrency)
        return min(maximum, Int(perWindow))
    }

    /// When no more than this many jobs are buffered, the claim loop claims more: half the
    /// prefetch, so that slots rarely wait for a claim.
    func refillThreshold(maximum: Int, concurrency: Int) -> Int {
        max(concurrency, prefetch(maximum: maximum, concurrency: concurrency) / 2)
    }

    /// The claim the buffer wants now, nil when it is full enough: enough jobs for every slot
    /// and the prefetch, the first `startingNow` of them going to free slots at once (their
    /// start recorded by the claim) when nothing is buffered. The one rule of the claim loop and
    /// of claims made with completions.
    func refill(maximumPrefetch: Int, concurrency: Int) -> (wanted: Int, startingNow: Int)? {
        let prefetch = prefetch(maximum: maximumPrefetch, concurrency: concurrency)
        let wanted = concurrency + prefetch - bufferedCount - active
        guard bufferedCount <= refillThreshold(maximum: maximumPrefetch, concurrency: concurrency), wanted > 0
        else { return nil }
        return (wanted, bufferedCount == 0 ? max(0, concurrency - active) : 0)
    }

    /// Holds jobs a claim took: registered as this pool's (leases renewed, shutdown releases
    /// them), each with the race its attempt will run under.
    mutating func hold(_ jobs: [ClaimedJob]) -> [BufferedJob] {
        jobs.map { job in
            let race = AttemptRace()
            running[job.id] = RunningJob(job: job, race: race, interruption: nil)
            return (job: job, race: race)
        }
    }
    var drainDeadline: ContinuousClock.Instant?
    var stats = WorkerPool.Statistics()
    /// When the next scheduled or retrying job falls due, as the last look at the store said;
    /// `.unknown` once a claim may have changed it. An idle pool whose every commit reaches it
    /// (see ``ChangeWatcher``) wakes its claim loop on the clock only for that.
    var nextDue = NextDue.unknown

    enum NextDue: Sendable {
        case unknown
        /// The time in seconds since 1970; nil when nothing is scheduled.
        case known(Double?)

        /// Whether a look at the store is due at `now`.
        func isDue(at now: Double) -> Bool {
            switch self {
            case .unknown: return true
            case .known(let time): return time.map { $0 <= now } ?? false
            }
        }
    }

    /// Marks the jobs interrupted and returns their races to resolve outside the lock.
    mutating func interrupt(_ ids: some Sequence<JobID>, because reason: Interruption) -> [AttemptRace] {
        var races: [AttemptRace] = []
        for id in ids {
            guard var entry = running[id], entry.interruption == nil else { continue }
            entry.interruption = reason
            running[id] = entry
            races.append(entry.race)
        }
        return races
    }
}
