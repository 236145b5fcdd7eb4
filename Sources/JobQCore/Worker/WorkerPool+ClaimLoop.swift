import Foundation
import Logging

extension WorkerPool {
    /// Claims jobs in batches into a small local buffer and runs them, at most `concurrency` at
    /// a time, in slot tasks that each take buffered jobs one after another; until shutdown,
    /// the job limit, or the stop condition. Sleeps on the wake signal between rounds.
    ///
    /// Claiming ahead (``Options/prefetch``) makes one claim transaction serve many jobs. The
    /// buffered jobs are leased and renewed like running ones, and released at shutdown. The
    /// buffer is refilled when it is half empty, so slots keep running while the claim is written.
    func claimLoop() async {
        var wakeups = signal.stream.makeAsyncIterator()
        let jobLimit = options.maximumJobs ?? Int.max
        await withDiscardingTaskGroup { slots in
            func startSlots() {
                while let (job, lone) = state.withLock({ state in
                    state.startSlot(concurrency: concurrency, jobLimit: jobLimit).map {
                        ($0, state.active == 1 && state.bufferedCount == 0)
                    }
                }) {
                    if lone {
                        // One job for an idle pool (the latency case): run it right here until it
                        // suspends, rather than waking another thread for it.
                        slots.addTaskStartingHere { await self.runSlot(job) }
                    } else {
                        slots.addTask { await self.runSlot(job) }
                    }
                }
            }
            // After a claim that came back short, the next round first checks with a cheap read
            // that there is something to claim, so idle pools do not take the write lock.
            while true {
                if Task.isCancelled {
                    // The buffer first: a slot whose job the interruption ends must find it
                    // empty, or it would start (and mark started) a job only to release it.
                    releaseBuffered()
                    interruptAll()
                    break
                }
                let (active, drainDeadline, limitReached) = state.withLock { state in
                    (state.active, state.drainDeadline, state.started >= jobLimit)
                }
                if drainDeadline != nil || limitReached {
                    releaseBuffered()
                    if active == 0 { break }
                    if let drainDeadline, ContinuousClock.now >= drainDeadline {
                        logger.warning("grace period over: cancelling and releasing \(active) running job(s)")
                        interruptAll()
                        break
                    }
                } else {
                    startSlots()
                    let refill = state.withLock {
                        $0.refill(maximumPrefetch: options.prefetch, concurrency: concurrency)
                    }
                    var claimed: [BufferedJob] = []
                    if let (wanted, startingNow) = refill {
                        let idle = state.withLock { $0.lastClaimShort }
                        var worthClaiming = !idle || signal.takeWorkHint()
                        if !worthClaiming {
                            let open = state.withLock { $0.claimBackoff.open(queues, at: .now) }
                            let outlook = open.isEmpty ? nil : try? await queue.store.claimOutlook(queues: open)
                            worthClaiming = outlook?.claimable ?? true
                            if !worthClaiming { state.withLock { $0.nextDue = .known(outlook?.nextDue) } }
                        }
                        // Not while a claim made with completions is written: its jobs come
                        // with a wake-up.
                        let mayClaim =
                            worthClaiming
                            && state.withLock { state in
                                guard !state.claimInFlight else { return false }
                                state.claimInFlight = true
                                // What falls due next may change with what this claim takes.
                                state.nextDue = .unknown
                                return true
                            }
                        if mayClaim {
                            // Jobs that go to free slots at once have their start recorded by the
                            // claim itself; the rest start through the completion batcher.
                            claimed = await claim(limit: wanted, startingNow: startingNow)
                        }
                        state.withLock { state in
                            if mayClaim {
                                state.claimInFlight = false
                                state.lastClaimShort = claimed.count < wanted
                            } else if !worthClaiming {
                                state.lastClaimShort = true
                            }
                            state.appendToBuffer(claimed)
                        }
                        startSlots()
                    }
                    let (nowActive, nowBuffered) = state.withLock { ($0.active, $0.bufferedCount) }
                    if claimed.isEmpty, nowActive == 0, nowBuffered == 0, await stopConditionMet() {
                        break
                    }
                }
                // A wait ended by cancellation goes round once more: the top of the loop
                // interrupts what runs and releases what is buffered.
                if await wakeups.next() == nil, !Task.isCancelled { break }
            }
            // A claim made with completions may still hand jobs over: from now on they are
            // released as they come, with whatever is still buffered.
            handBack { state in
                state.claimingEnded = true
                return state.takeAllBuffered()
            }
        }
    }

    /// Releases every buffered job: their attempts never start, and their leases are given
    /// back through the batcher (unless a job was cancelled meanwhile: then nothing is written).
    private func releaseBuffered() {
        handBack { $0.takeAllBuffered() }
    }

    /// Releases the buffered jobs of executors paused since they were claimed (or of every
    /// executor, the store paused): a pause then holds back what this worker claimed ahead
    /// too, within a maintenance pass, instead of seconds of such work starting after it.
    /// Reads the pauses only while something is buffered.
    func releasePausedBuffered() async {
        guard state.withLock({ $0.bufferedCount > 0 }),
            let paused = try? await queue.store.pausedClaims(), paused.pausesAnything
        else { return }
        let released = handBack { $0.takeBuffered { paused.holds($0.executor) } }
        if released > 0 { logger.info("handed back \(released) claimed-ahead job(s) of paused executors") }
    }

    /// Releases the buffered jobs `take` removes: their attempts never start and their leases
    /// go back through the batcher (a job cancelled while it waited keeps that reason: nothing
    /// is written for it). Returns how many.
    @discardableResult
    func handBack(_ take: (inout PoolState) -> [BufferedJob]) -> Int {
        let buffered = state.withLock { state in
            take(&state).map { entry in
                let interruption = state.running[entry.job.id]?.interruption ?? .shutdown
                _ = state.interrupt([entry.job.id], because: .shutdown)
                return (entry, interruption)
            }
        }
        for (entry, interruption) in buffered {
            entry.race.resolve(.interrupted)
            finish(
                entry.job, race: entry.race,
                outcome: outcome(of: entry.job, end: .interrupted, interruption: interruption))
        }
        return buffered.count
    }

    /// Claims from the queues not backed off. A queue whose claim fails is backed off
    /// (``ClaimBackoff``) and the others are claimed again at once, keeping what the failed
    /// claim had already committed (``QueueClaimFailure``).
    private func claim(limit: Int, startingNow: Int) async -> [BufferedJob] {
        var jobs: [ClaimedJob] = []
        // One try, and one more after each queue that failed.
        for _ in 0...queues.count where jobs.count < limit {
            let now = ContinuousClock.now
            let open = state.withLock { $0.claimBackoff.open(queues, at: now) }
            guard !open.isEmpty else { break }
            do {
                // Shielded from this task's cancellation: what a claim commits is this pool's to
                // release (``uncancelled(_:)``).
                let (store, workerID, lease) = (queue.store, workerID, options.lease)
                let (wanted, starting) = (limit - jobs.count, max(0, startingNow - jobs.count))
                jobs += try await uncancelled {
                    try await store.claim(
                        queues: open, limit: wanted, workerID: workerID, lease: lease, startingNow: starting)
                }
                state.withLock { $0.claimBackoff.succeeded(open) }
                break
            } catch {
                jobs += (error as? QueueClaimFailure)?.claimed ?? []
                // A queue's failure: the other queues are claimed again at once.
                let (failed, forGood) = noteClaimFailure(error, at: now)
                guard let failed else { break }
                if forGood { await endUnreadableJobs(of: failed) }
            }
        }
        return state.withLock { $0.hold(jobs) }
    }

    /// Backs off what a failed claim names (its queue, or every queue) and says so. Returns the
    /// queue it names, and whether it failed for good (its unreadable jobs are then to be ended).
    func noteClaimFailure(_ error: any Error, at now: ContinuousClock.Instant) -> (queue: String?, forGood: Bool) {
        let failure = error as? QueueClaimFailure
        let kind = StoreErrorKind(of: error)
        let delay = state.withLock { $0.claimBackoff.failed(queue: failure?.queue, kind: kind, at: now) }
        let what = failure?.queue.map { "claims from queue '\($0)'" } ?? "claims"
        logger.storeFailure(
            .error, error,
            "claim failed: \(failure.map { "\($0.underlying)" } ?? "\(error)"); \(what) wait \(DurationParser.format(delay)) (\(kind == .transient ? "a transient error" : "a permanent error: the data must change first"))"
        )
        return (failure?.queue, kind == .permanent)
    }

    /// After a claim of `queue` failed for good: ends the jobs whose payload no store can read
    /// back (the usual cause), and lets the queue be claimed again at once if there were any.
    func endUnreadableJobs(of queue: String) async {
        do {
            let ended = try await self.queue.store.endUnreadableJobs(queue: queue)
            guard !ended.isEmpty else { return }
            logger.warning(
                "ended \(ended.count) job(s) of queue '\(queue)' whose payload no store can read back (ids \(ended.prefix(10).map(String.init).joined(separator: ", "))); claiming the queue again"
            )
            state.withLock { $0.claimBackoff.succeeded([queue]) }
        } catch {
            logger.error("looking for unreadable jobs in queue '\(queue)' failed: \(error)")
        }
    }

    private func stopConditionMet() async -> Bool {
        switch options.stopWhen {
        case .never:
            return false
        case .queuesEmpty:
            return (try? await !queue.store.hasUnfinishedWork(queues: queues, includingFuture: false)) ?? false
        case .allJobsFinished:
            return (try? await !queue.store.hasUnfinishedWork(queues: queues, includingFuture: true)) ?? false
        }
    }

    /// Interrupts every running job for shutdown; each is then released.
    func interruptAll() {
        let races = state.withLock { $0.interrupt(Array($0.running.keys), because: .shutdown) }
        for race in races { race.resolve(.interrupted) }
    }
}
