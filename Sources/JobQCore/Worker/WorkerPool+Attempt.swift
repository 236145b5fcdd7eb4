import Foundation
import Logging
import ServiceContextModule
import Tracing

extension WorkerPool {
    /// Runs `first`, then, in the same task, every buffered job it can take, until the buffer
    /// is empty, the job limit is reached or the pool drains. A slot hands each outcome to the
    /// completion batcher without waiting for it to be written, so a stream of short jobs costs
    /// one task per slot, not one per job.
    func runSlot(_ first: BufferedJob) async {
        let jobLimit = options.maximumJobs ?? Int.max
        var next: BufferedJob? = first
        var runSinceYield = 0
        while let (job, race) = next {
            // Jobs that never suspend would keep this thread from the pool's other tasks (lease
            // renewal, the claim loop) for as long as the buffer is refilled: give way now and then.
            runSinceYield += 1
            if runSinceYield == 32 {
                runSinceYield = 0
                await Task.yield()
            }
            let (outcome, afterRecords) = await attempt(job, race: race)
            // A cancelled pool releases what is buffered; its slots take nothing more.
            let cancelled = Task.isCancelled
            let (following, lowBuffer, othersActive) = state.withLock { state -> (BufferedJob?, Bool, Bool) in
                let following = cancelled ? nil : state.takeBuffered(jobLimit: jobLimit)
                if following == nil { state.active -= 1 }
                let lowBuffer =
                    state.bufferedCount <= state.refillThreshold(maximum: options.prefetch, concurrency: concurrency)
                return (following, lowBuffer, state.active > (following == nil ? 0 : 1))
            }
            // The next job's start, if it needs one, is written with this outcome.
            finish(
                job, race: race, outcome: outcome, afterRecords: afterRecords,
                moreComing: following != nil || othersActive,
                startFollows: following.map { !$0.job.startRecorded } ?? false)
            // The claim loop refills the buffer before it runs dry, and starts slots for jobs
            // it claims while this one is gone.
            if following == nil || lowBuffer { signal.poke() }
            next = following
        }
    }

    /// Runs one claimed attempt; returns the outcome to record, or nil when there is nothing
    /// to record (the job was cancelled or taken over), and for a durable function whose step
    /// records are still queued, what the batcher checks before it writes the outcome after them.
    ///
    /// The executor runs in its own task so that the pool can stop waiting for it (timeout,
    /// shutdown, cancellation by an operator) even if it ignores cancellation; whatever it returns
    /// after that is discarded.
    ///
    /// The running map is keyed by job id, and a snoozed job can be claimed again before the
    /// previous run's outcome is written; so every lookup checks that the entry is this run's
    /// (the same race), and the old run never removes the new one.
    func attempt(_ job: ClaimedJob, race: AttemptRace) async -> (
        outcome: AttemptOutcome?, afterRecords: CompletionBatcher.AfterStepRecords?
    ) {
        var end: AttemptRace.End
        var recordsQueued: FunctionRun?
        var ran = false
        var span: (any Span)?
        var function: FunctionRun?
        let sharedWrites = job.workflowID == nil ? nil : SharedWrites()
        if !race.isResolved, !job.startRecorded, !job.isSuspect {
            // Claimed ahead: its start mark goes with the next transaction (with the outcome
            // of the job this slot just finished).
            completions.noteStart(job, race: race)
        } else {
            // Outcomes queued for a start that is not needed after all (or written apart).
            completions.kick()
        }
        if !race.isResolved, !job.startRecorded, job.isSuspect {
            // A worker once died holding it before its start was marked: its start is committed
            // before it runs, so that a death from now on counts as its attempt.
            switch await recordStartBeforeRunning(job) {
            case .recorded: break
            case .refused: return (nil, nil)
            case .failed: return (.released, nil)
            }
        }
        if race.isResolved {
            // Interrupted while it waited in the buffer: never start it.
            end = .interrupted
        } else if let executor = executors[job.executor] {
            let completions = self.completions
            let progress = AttemptProgress(
                store: queue.store, job: job, workerID: workerID, interval: options.progressInterval,
                startWritten: { [id = job.id] in await completions.startWritten(id) })
            let run = FunctionRun(
                store: queue.store, job: job, workerID: workerID, startWritten: progress.startWritten,
                recordLater: { record, settled in completions.recordStep(.init(record: record, settled: settled)) })
            function = run
            let waited = Date().timeIntervalSince1970 - job.runAt
            metrics?.started(queue: job.queue, executor: job.executor, waitSeconds: waited)
            ran = true
            span = tracer.map { JobTracing.startAttemptSpan(job, tracer: $0) }
            let started = ContinuousClock.now
            if let span {
                // The executor's own spans become children of the attempt's.
                end = await ServiceContext.withValue(span.context) {
                    await runExecutor(
                        executor, job: job, race: race, progress: progress, function: run, sharedWrites: sharedWrites)
                }
            } else {
                end = await runExecutor(
                    executor, job: job, race: race, progress: progress, function: run, sharedWrites: sharedWrites)
            }
            let seconds = (ContinuousClock.now - started).inSeconds
            state.withLock { $0.observeRun(seconds: seconds) }
            metrics?.ran(queue: job.queue, executor: job.executor, seconds: seconds)
            history?.ran(queue: job.queue, executor: job.executor, waited: waited, ran: seconds)
            await progress.flush()
            // A function's outcome follows its steps' records: a step whose record was not
            // written ends the attempt as what kept it out (lost, or failed to be retried).
            // Records still queued are not waited for here: the batcher writes the outcome
            // after them, and the slot takes its next job.
            if run.hasRecordsInFlight {
                recordsQueued = run
            } else if let problem = run.recordProblem {
                end = .finished(.failure(problem))
            }
        } else {
            let names = executors.keys.sorted().joined(separator: ", ")
            end = .finished(
                .failure(
                    UnknownExecutorError(
                        message:
                            "no executor named '\(job.executor)' is registered in this worker pool (registered: \(names.isEmpty ? "none" : names)); "
                            + "run a pool that registers it, or enqueue with a registered name")))
        }
        let interruption = state.withLock { state in
            state.running[job.id].flatMap { $0.race === race ? $0.interruption : nil }
        }
        var outcome = outcome(of: job, end: end, interruption: interruption, sharedWrites: sharedWrites?.all ?? [])
        if let function, function.cancelRequested, let ended = outcome {
            outcome = Self.cancelledFunction(ended, end: end)
        }
        if outcome == nil, ran { metrics?.discarded(queue: job.queue, executor: job.executor) }
        if let span { JobTracing.end(span, end: end, outcome: outcome) }
        guard let recordsQueued else { return (outcome, nil) }
        let afterRecords = CompletionBatcher.AfterStepRecords(run: recordsQueued) { [self] problem in
            let failed = AttemptRace.End.finished(.failure(problem))
            let outcome = self.outcome(of: job, end: failed, interruption: interruption)
            guard recordsQueued.cancelRequested, let outcome else { return outcome }
            return Self.cancelledFunction(outcome, end: failed)
        }
        return (outcome, afterRecords)
    }

    enum StartRecord { case recorded, refused, failed }

    /// Commits a suspect job's start on its own: `.refused` when the job is no longer this
    /// pool's (nothing to record), `.failed` when the store did not take it (the job goes back
    /// unstarted, its attempt not counted).
    private func recordStartBeforeRunning(_ job: ClaimedJob) async -> StartRecord {
        var job = job
        job.startTime = Date().timeIntervalSince1970
        do {
            let refused = try await queue.store.recordOutcomes([], starting: [job], workerID: workerID)
            return refused.starts.contains(job.id) ? .refused : .recorded
        } catch {
            logger.storeFailure(
                .error, error,
                "job \(job.id): could not record its start before running it (\(error)); it goes back to its queue unstarted"
            )
            return .failed
        }
    }

    /// Hands an outcome to the batcher. The job stays leased (and renewed) until the outcome
    /// is written; with nothing to write, it is forgotten now.
    func finish(
        _ job: ClaimedJob, race: AttemptRace, outcome: AttemptOutcome?,
        afterRecords: CompletionBatcher.AfterStepRecords? = nil, moreComing: Bool = true, startFollows: Bool = false
    ) {
        guard let outcome else {
            let parked = state.withLock { state in
                state.forget(job.id, race: race)
                guard state.parkedItself.remove(job.id) == nil else {
                    state.stats.snoozed += 1
                    return true
                }
                state.stats.refused += 1
                return false
            }
            if parked {
                logger.debug("job \(job.id) parked until the jobs it called finish")
            } else {
                logger.info("job \(job.id) was cancelled or taken over while running; its outcome is discarded")
            }
            return
        }
        completions.submit(
            .init(job: job, outcome: outcome, race: race, afterRecords: afterRecords), moreComing: moreComing,
            startFollows: startFollows)
    }

    /// After a completion transaction: counts, logs, and forgets the recorded jobs.
    func recorded(_ items: [CompletionBatcher.Item], refused: Result<Set<JobID>, any Error>) {
        let refusedIDs = (try? refused.get()) ?? []
        state.withLock { state in
            for item in items {
                state.forget(item.job.id, race: item.race)
                guard case .success = refused else { continue }
                if refusedIDs.contains(item.job.id) {
                    state.stats.refused += 1
                    continue
                }
                switch item.outcome {
                case .succeeded: state.stats.succeeded += 1
                case .retry: state.stats.retried += 1
                case .dead: state.stats.dead += 1
                case .released: state.stats.released += 1
                case .snoozed, .parked: state.stats.snoozed += 1
                case .cancelled: state.stats.dead += 1
                }
            }
        }
        for item in items {
            if case .failure(let error) = refused {
                // The lease will expire and the job will run again: at-least-once, never lost.
                logger.storeFailure(
                    .error, error,
                    "job \(item.job.id): could not record the outcome (\(error)); it will run again when its lease expires"
                )
            } else if refusedIDs.contains(item.job.id) {
                logger.info(
                    "job \(item.job.id) attempt \(item.job.attempt): outcome refused; the job was cancelled or taken over"
                )
                metrics?.discarded(queue: item.job.queue, executor: item.job.executor)
            } else {
                log(item.job, item.outcome)
                metrics?.completed(queue: item.job.queue, executor: item.job.executor, outcome: item.outcome)
                history?.ended(queue: item.job.queue, executor: item.job.executor, outcome: item.outcome)
            }
        }
        // The claim loop may be waiting for these jobs to finish before it stops.
        signal.poke()
    }

    private func runExecutor(
        _ executor: ErasedExecutor, job: ClaimedJob, race: AttemptRace, progress: AttemptProgress,
        function: FunctionRun, sharedWrites: SharedWrites?
    ) async -> AttemptRace.End {
        let timeout = job.timeout ?? executor.defaultTimeout
        let deadline = timeout.map { ContinuousClock.now + $0 }
        let context = JobContext(
            jobID: job.id, executor: job.executor, queue: job.queue, attempt: job.attempt,
            maxAttempts: job.maxAttempts, deadline: deadline, snoozes: job.snoozes, checkpointJSON: job.checkpointJSON,
            workflowID: job.workflowID, progressWriter: progress, sharedJSON: job.sharedJSON,
            sharedWrites: sharedWrites,
            failedDependenciesJSON: job.failedDependenciesJSON, function: function)
        let work = startImmediately {
            do {
                race.resolve(.finished(.success(try await executor.run(job.payloadJSON, context))))
            } catch {
                race.resolve(.finished(.failure(error)))
            }
        }
        let timer = timeout.map { timeout in
            Task {
                try? await Task.sleep(for: timeout)
                if !Task.isCancelled { race.resolve(.timedOut(timeout)) }
            }
        }
        let end = await withTaskCancellationHandler {
            await race.wait()
        } onCancel: {
            race.resolve(.interrupted)
        }
        timer?.cancel()
        if case .finished = end {
        } else {
            work.cancel()
            // The outcome waits for the executor to wind down (a shell command's process group
            // to be gone), so that a retry never runs beside the attempt it replaces; an
            // executor that ignores cancellation is waited for no longer than the grace.
            await Self.wait(for: work, atMost: options.cancellationGracePeriod)
        }
        return end
    }

    /// Returns when `task` ends or `limit` has passed, whichever comes first.
    static func wait(for task: Task<Void, Never>, atMost limit: Duration) async {
        let done = Once<Void>()
        let watcher = Task {
            await task.value
            done.set(())
        }
        let timer = Task {
            await Descriptors.sleep(limit)
            done.set(())
        }
        await done.wait()
        watcher.cancel()
        timer.cancel()
    }

    func outcome(
        of job: ClaimedJob, end: AttemptRace.End, interruption: PoolState.Interruption?,
        sharedWrites: [SharedWrite] = []
    ) -> AttemptOutcome? {
        outcomeAsRun(of: job, end: end, interruption: interruption, sharedWrites: sharedWrites).map(Self.storable)
    }

    /// `outcome` as every store can hold it (``StoredText``): NULs in an error replaced; a
    /// result, checkpoint or shared value no store can hold ends the job, saying why, rather
    /// than failing the write of every outcome batched with it.
    static func storable(_ outcome: AttemptOutcome) -> AttemptOutcome {
        switch outcome {
        case .succeeded(let resultJSON, let sharedWrites):
            if let problem = StoredText.problem(inJSON: resultJSON) {
                return .dead(error: "the result holds \(problem), which jobq does not store", timedOut: false)
            }
            if let write = sharedWrites.first(where: { StoredText.problem(inJSON: $0.json) != nil }) {
                let problem = StoredText.problem(inJSON: write.json) ?? ""
                return .dead(
                    error: "the value for shared key '\(write.key)' holds \(problem), which jobq does not store",
                    timedOut: false)
            }
            return outcome
        case .retry(let error, let at, let timedOut):
            return .retry(error: StoredText.plain(error), at: at, timedOut: timedOut)
        case .dead(let error, let timedOut):
            return .dead(error: StoredText.plain(error), timedOut: timedOut)
        case .snoozed(_, let checkpointJSON?):
            if let problem = StoredText.problem(inJSON: checkpointJSON) {
                return .dead(error: "the checkpoint holds \(problem), which jobq does not store", timedOut: false)
            }
            return outcome
        case .snoozed, .released, .parked:
            return outcome
        case .cancelled(let reason):
            return .cancelled(reason: StoredText.plain(reason))
        }
    }

    private func outcomeAsRun(
        of job: ClaimedJob, end: AttemptRace.End, interruption: PoolState.Interruption?, sharedWrites: [SharedWrite]
    ) -> AttemptOutcome? {
        switch end {
        case .finished(.success(let resultJSON)):
            return .succeeded(resultJSON: resultJSON, sharedWrites: sharedWrites)
        case .finished(.failure(let error)):
            // A step's error decides as the error itself would, with the step named.
            let cause = (error as? FunctionStepFailed)?.underlying ?? error
            switch cause {
            case let park as FunctionPark: return .parked(until: park.until, awaiting: park.awaiting)
            case is FunctionAttemptLost: return nil
            case is FunctionParkedForCalls:
                state.withLock { _ = $0.parkedItself.insert(job.id) }
                return nil
            case let error as PayloadDecodingError: return .dead(error: error.description, timedOut: false)
            case is NonRetryableError, is FunctionReplayMismatch: return .dead(error: "\(error)", timedOut: false)
            case let snooze as Snooze: return reschedule(job, after: snooze.delay, checkpointJSON: nil)
            case let later as ContinueLater:
                return reschedule(job, after: later.delay, checkpointJSON: later.checkpointJSON)
            case is CancellationError where interruption != nil:
                return interruption == .shutdown ? .released : nil
            // The executor's policy says which errors no retry can fix.
            case let cause where executors[job.executor]?.retryPolicy?.giveUpOn(cause) == true:
                return .dead(error: "\(error)", timedOut: false)
            default: return failure(job, message: "\(error)", timedOut: false)
            }
        case .timedOut(let limit):
            return failure(
                job,
                message:
                    "timed out after \(DurationParser.format(limit)) (attempt \(job.attempt) of \(job.maxAttempts))",
                timedOut: true)
        case .interrupted:
            // Lost jobs belong to someone else now (or were cancelled): record nothing.
            return interruption == .lost ? nil : .released
        }
    }

    /// The outcome of a run of a durable function whose cancelling was asked for: it ran its
    /// compensation (it had one run to do so), and ends `cancelled` however that run ended; a
    /// run that did not end (released at shutdown, taken over) runs again.
    static func cancelledFunction(_ outcome: AttemptOutcome, end: AttemptRace.End) -> AttemptOutcome {
        switch outcome {
        case .released, .cancelled: return outcome
        case .succeeded, .parked, .snoozed:
            return .cancelled(reason: "cancelled by an operator; the function finished its run")
        case .retry(let error, _, _), .dead(let error, _):
            if case .finished(.failure(let thrown)) = end, thrown is FunctionCancelled {
                return .cancelled(reason: "cancelled by an operator; the function compensated and ended")
            }
            return .cancelled(reason: "cancelled by an operator; its compensation failed: \(error)")
        }
    }

    private func reschedule(_ job: ClaimedJob, after delay: Duration, checkpointJSON: String?) -> AttemptOutcome {
        guard job.snoozes < options.maximumSnoozes else {
            return .dead(
                error: "snoozed \(job.snoozes) times, the limit (WorkerPool.Options.maximumSnoozes); "
                    + "finish the work in fewer rounds or raise the limit", timedOut: false)
        }
        return .snoozed(until: Date().addingTimeInterval(max(delay, .zero).inSeconds), checkpointJSON: checkpointJSON)
    }

    private func failure(_ job: ClaimedJob, message: String, timedOut: Bool) -> AttemptOutcome {
        if job.attempt < job.maxAttempts {
            let backoff = executors[job.executor]?.retryPolicy?.backoff ?? options.retryBackoff
            let delay = backoff.delay(afterAttempt: job.attempt)
            return .retry(error: message, at: Date().addingTimeInterval(delay.inSeconds), timedOut: timedOut)
        }
        return .dead(error: message, timedOut: timedOut)
    }

    private func log(_ job: ClaimedJob, _ outcome: AttemptOutcome) {
        // Successes log at debug: skip building their metadata when nobody reads it.
        if case .succeeded = outcome, logger.logLevel > .debug { return }
        let metadata: Logger.Metadata = ["job": "\(job.id)", "executor": "\(job.executor)", "attempt": "\(job.attempt)"]
        switch outcome {
        case .succeeded: logger.debug("job succeeded", metadata: metadata)
        case .retry(let error, let at, _):
            logger.warning("job failed, will retry at \(ISO8601.string(at)): \(error)", metadata: metadata)
        case .dead(let error, _): logger.warning("job dead: \(error)", metadata: metadata)
        case .released: logger.info("job released unfinished", metadata: metadata)
        case .snoozed(let until, _): logger.debug("job snoozed until \(ISO8601.string(until))", metadata: metadata)
        case .cancelled(let reason): logger.info("function cancelled: \(reason)", metadata: metadata)
        case .parked(let until, let awaiting):
            logger.debug(
                "function parked until \(ISO8601.string(until))\(awaiting.map { " or the signal '\($0)'" } ?? "")",
                metadata: metadata)
        }
    }
}

/// A job names an executor that this pool does not have. Another pool may have it, so the
/// attempt fails and the retry policy applies.
struct UnknownExecutorError: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}
