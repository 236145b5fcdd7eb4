import Foundation
import Logging

extension WorkerPool {
    /// Runs one claimed attempt and records its outcome.
    ///
    /// The executor runs in its own task so that the pool can stop waiting for it (timeout,
    /// shutdown, cancellation by an operator) even if it ignores cancellation; whatever it returns
    /// after that is discarded.
    ///
    /// The running map is keyed by job id, and a snoozed job can be claimed again before the
    /// task of its previous run has removed its entry; so every lookup checks that the entry is
    /// this run's (the same race), and the old run never removes the new one.
    func perform(_ job: ClaimedJob, race: AttemptRace) async {
        let end: AttemptRace.End
        let progress = AttemptProgress(store: queue.store, job: job, workerID: workerID, interval: options.progressInterval)
        if race.isResolved {
            // Interrupted while it waited in the buffer: never start it.
            end = .interrupted
        } else if let executor = executors[job.executor] {
            let started = ContinuousClock.now
            end = await runExecutor(executor, job: job, race: race, progress: progress)
            let seconds = (ContinuousClock.now - started).inSeconds
            state.withLock { $0.observeRun(seconds: seconds) }
            await progress.flush()
        } else {
            let names = executors.keys.sorted().joined(separator: ", ")
            end = .finished(.failure(UnknownExecutorError(
                message: "no executor named '\(job.executor)' is registered in this worker pool (registered: \(names.isEmpty ? "none" : names)); "
                    + "run a pool that registers it, or enqueue with a registered name")))
        }
        let interruption = state.withLock { state in
            state.running[job.id].flatMap { $0.race === race ? $0.interruption : nil }
        }
        let outcome = self.outcome(of: job, end: end, interruption: interruption)
        // The slot is free as soon as the executor is done: the next job starts while this
        // outcome waits to be written with the others finishing now. The job stays leased (and
        // renewed) until its outcome is recorded.
        state.withLock { $0.active -= 1 }
        signal.poke()
        await record(job, outcome)
        state.withLock { state in
            if state.running[job.id]?.race === race { state.running.removeValue(forKey: job.id) }
        }
        signal.poke()
    }

    private func runExecutor(
        _ executor: ErasedExecutor, job: ClaimedJob, race: AttemptRace, progress: AttemptProgress
    ) async -> AttemptRace.End {
        let timeout = job.timeout ?? executor.defaultTimeout
        let deadline = timeout.map { ContinuousClock.now + $0 }
        let context = JobContext(
            jobID: job.id, executor: job.executor, queue: job.queue, attempt: job.attempt,
            maxAttempts: job.maxAttempts, deadline: deadline, snoozes: job.snoozes, checkpointJSON: job.checkpointJSON,
            progressWriter: progress)
        let work = Task {
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
        if case .finished = end {} else { work.cancel() }
        return end
    }

    private func outcome(of job: ClaimedJob, end: AttemptRace.End, interruption: PoolState.Interruption?) -> AttemptOutcome? {
        switch end {
        case .finished(.success(let resultJSON)):
            return .succeeded(resultJSON: resultJSON)
        case .finished(.failure(let error)):
            switch error {
            case let error as PayloadDecodingError: return .dead(error: error.description, timedOut: false)
            case let error as NonRetryableError: return .dead(error: error.message, timedOut: false)
            case let snooze as Snooze: return reschedule(job, after: snooze.delay, checkpointJSON: nil)
            case let later as ContinueLater: return reschedule(job, after: later.delay, checkpointJSON: later.checkpointJSON)
            case is CancellationError where interruption != nil:
                return interruption == .shutdown ? .released : nil
            default: return failure(job, message: "\(error)", timedOut: false)
            }
        case .timedOut(let limit):
            return failure(
                job, message: "timed out after \(DurationParser.format(limit)) (attempt \(job.attempt) of \(job.maxAttempts))",
                timedOut: true)
        case .interrupted:
            // Lost jobs belong to someone else now (or were cancelled): record nothing.
            return interruption == .lost ? nil : .released
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
            let delay = options.retryBackoff.delay(afterAttempt: job.attempt)
            return .retry(error: message, at: Date().addingTimeInterval(delay.inSeconds), timedOut: timedOut)
        }
        return .dead(error: message, timedOut: timedOut)
    }

    private func record(_ job: ClaimedJob, _ outcome: AttemptOutcome?) async {
        guard let outcome else {
            state.withLock { $0.stats.refused += 1 }
            logger.info("job \(job.id) was cancelled or taken over while running; its outcome is discarded")
            return
        }
        do {
            let accepted = try await completions.record(job, outcome)
            state.withLock { state in
                if !accepted {
                    state.stats.refused += 1
                    return
                }
                switch outcome {
                case .succeeded: state.stats.succeeded += 1
                case .retry: state.stats.retried += 1
                case .dead: state.stats.dead += 1
                case .released: state.stats.released += 1
                case .snoozed: state.stats.snoozed += 1
                }
            }
            if !accepted {
                logger.info("job \(job.id) attempt \(job.attempt): outcome refused; the job was cancelled or taken over")
            } else {
                log(job, outcome)
            }
        } catch {
            // The lease will expire and the job will run again: at-least-once, never lost.
            logger.error("job \(job.id): could not record the outcome (\(error)); it will run again when its lease expires")
        }
    }

    private func log(_ job: ClaimedJob, _ outcome: AttemptOutcome) {
        let metadata: Logger.Metadata = ["job": "\(job.id)", "executor": "\(job.executor)", "attempt": "\(job.attempt)"]
        switch outcome {
        case .succeeded: logger.debug("job succeeded", metadata: metadata)
        case .retry(let error, let at, _):
            logger.warning("job failed, will retry at \(ISO8601.string(at)): \(error)", metadata: metadata)
        case .dead(let error, _): logger.warning("job dead: \(error)", metadata: metadata)
        case .released: logger.info("job released unfinished", metadata: metadata)
        case .snoozed(let until, _): logger.debug("job snoozed until \(ISO8601.string(until))", metadata: metadata)
        }
    }
}

/// A job names an executor that this pool does not have. Another pool may have it, so the
/// attempt fails and the retry policy applies.
struct UnknownExecutorError: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}
