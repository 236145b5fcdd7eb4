import Foundation
import Logging

extension WorkerPool {
    /// Claims jobs while slots are free and runs each in a child task, until shutdown or the
    /// stop condition. Sleeps on the wake signal between rounds.
    func claimLoop() async {
        var wakeups = signal.stream.makeAsyncIterator()
        await withDiscardingTaskGroup { jobs in
            // After a claim that came back short, the next round first checks with a cheap read
            // that there is something to claim, so idle pools do not take the write lock.
            var idle = false
            while true {
                if Task.isCancelled {
                    interruptAll()
                    break
                }
                let (running, drainDeadline) = state.withLock { ($0.running.count, $0.drainDeadline) }
                if let drainDeadline {
                    if running == 0 { break }
                    if ContinuousClock.now >= drainDeadline {
                        logger.warning("grace period over: cancelling and releasing \(running) running job(s)")
                        interruptAll()
                        break
                    }
                } else {
                    let free = concurrency - running
                    var claimed: [(job: ClaimedJob, race: AttemptRace)] = []
                    if free > 0 {
                        var worthClaiming = !idle || signal.takeWorkHint()
                        if !worthClaiming {
                            worthClaiming = (try? await queue.store.hasClaimableWork(queues: queues)) ?? true
                        }
                        if worthClaiming { claimed = await claim(limit: free) }
                        idle = claimed.count < free
                        for (job, race) in claimed {
                            jobs.addTask { await self.perform(job, race: race) }
                        }
                    }
                    if claimed.isEmpty, running == 0, await stopConditionMet() {
                        break
                    }
                    // A full batch may mean more work is waiting: claim again once slots free up.
                    if !claimed.isEmpty, claimed.count == free { idle = false }
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
