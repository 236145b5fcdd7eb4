import Foundation
import Logging

extension WorkerPool {
    /// Claims jobs in batches into a small local buffer and runs them, at most `concurrency` at
    /// a time, each in a child task; until shutdown, the job limit, or the stop condition.
    /// Sleeps on the wake signal between rounds.
    ///
    /// Claiming ahead (``Options/prefetch``) makes one claim transaction serve many jobs. The
    /// buffered jobs are leased and renewed like running ones, and released at shutdown.
    func claimLoop() async {
        var wakeups = signal.stream.makeAsyncIterator()
        await withDiscardingTaskGroup { jobs in
            var buffer: [(job: ClaimedJob, race: AttemptRace)] = []
            var next = 0
            let jobLimit = options.maximumJobs ?? Int.max
            func startBuffered(upTo limit: Int, ignoringJobLimit: Bool = false) {
                while next < buffer.count {
                    let canStart = state.withLock { state in
                        guard state.active < limit, ignoringJobLimit || state.started < jobLimit else { return false }
                        state.active += 1
                        state.started += 1
                        return true
                    }
                    guard canStart else { break }
                    let (job, race) = buffer[next]
                    next += 1
                    jobs.addTask { await self.perform(job, race: race) }
                }
                if next == buffer.count {
                    buffer.removeAll(keepingCapacity: true)
                    next = 0
                }
            }
            /// Hands every buffered job to a task that releases it (its race is interrupted).
            func releaseBuffered() {
                let waiting = buffer[next...].map(\.job.id)
                let races = state.withLock { $0.interrupt(waiting, because: .shutdown) }
                for race in races { race.resolve(.interrupted) }
                startBuffered(upTo: Int.max, ignoringJobLimit: true)
            }
            // After a claim that came back short, the next round first checks with a cheap read
            // that there is something to claim, so idle pools do not take the write lock.
            var idle = false
            while true {
                if Task.isCancelled {
                    interruptAll()
                    releaseBuffered()
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
                    startBuffered(upTo: concurrency)
                    let buffered = buffer.count - next
                    let (active, prefetch) = state.withLock { state in
                        (state.active, state.prefetch(maximum: options.prefetch, concurrency: concurrency))
                    }
                    let wanted = concurrency + prefetch - buffered - active
                    var claimed: [(job: ClaimedJob, race: AttemptRace)] = []
                    // Refill before the buffer runs dry, so that slots never wait for a claim.
                    if buffered < concurrency, wanted > 0 {
                        var worthClaiming = !idle || signal.takeWorkHint()
                        if !worthClaiming {
                            worthClaiming = (try? await queue.store.hasClaimableWork(queues: queues)) ?? true
                        }
                        if worthClaiming { claimed = await claim(limit: wanted) }
                        idle = claimed.count < wanted
                        buffer += claimed
                        startBuffered(upTo: concurrency)
                    }
                    let nowActive = state.withLock { $0.active }
                    if claimed.isEmpty, nowActive == 0, buffer.count == next, await stopConditionMet() {
                        break
                    }
                }
                if await wakeups.next() == nil { break }
            }
        }
    }

    private func claim(limit: Int) async -> [(job: ClaimedJob, race: AttemptRace)] {
        do {
            let claimed = try await queue.store.claim(
                queues: queues, limit: limit, workerID: workerID, lease: options.lease
            ).map { (job: $0, race: AttemptRace()) }
            state.withLock { state in
                for (job, race) in claimed {
                    state.running[job.id] = PoolState.RunningJob(job: job, race: race, interruption: nil)
                }
            }
            return claimed
        } catch {
            logger.error("claim failed: \(error)")
            return []
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
