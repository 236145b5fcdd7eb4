import Foundation
import Logging

extension WorkerPool {
    /// The pool's background duties until cancelled: wake the claim loop every poll interval,
    /// renew the leases of running jobs (and notice jobs cancelled or taken over), heartbeat
    /// the worker row, and reclaim expired leases of dead or hung workers.
    func maintain() async {
        let clock = ContinuousClock()
        // A third of the lease leaves two chances to renew before it expires; at least every 5s
        // so that `jobq status` sees the worker alive and cancellations are noticed quickly.
        let renewEvery = min(options.lease / 3, .seconds(5))
        let reclaimEvery = max(options.pollInterval, .milliseconds(500))
        var lastRenewal = clock.now
        var lastReclaim = clock.now - reclaimEvery
        while !Task.isCancelled {
            try? await Task.sleep(for: options.pollInterval)
            if Task.isCancelled { break }
            signal.poke()
            let now = clock.now
            if now - lastRenewal >= renewEvery {
                lastRenewal = now
                await renewLeases()
            }
            if now - lastReclaim >= reclaimEvery {
                lastReclaim = now
                do {
                    let reclaimed = try await queue.store.reclaimExpiredLeases()
                    if reclaimed > 0 {
                        logger.warning("reclaimed \(reclaimed) job(s) whose worker stopped renewing its lease")
                        signal.poke(workArrived: true)
                    }
                } catch {
                    logger.error("reclaiming expired leases failed: \(error)")
                }
            }
        }
    }

    private func renewLeases() async {
        let ids = state.withLock { state in state.running.filter { $0.value.interruption == nil }.map(\.key) }
        do {
            try await queue.store.heartbeatWorker(id: workerID)
            let owned = try await queue.store.renewLeases(ids, workerID: workerID, lease: options.lease)
            let lost = ids.filter { !owned.contains($0) }
            guard !lost.isEmpty else { return }
            let races = state.withLock { $0.interrupt(lost, because: .lost) }
            for race in races { race.resolve(.interrupted) }
            if !races.isEmpty {
                logger.info("stopping \(races.count) job(s) that were cancelled or taken over: \(lost.map(String.init).joined(separator: ", "))")
            }
        } catch {
            logger.error("renewing leases failed: \(error); jobs keep running and the renewal is retried")
        }
    }
}
