import Foundation
import Logging

extension WorkerPool {
    /// The pool's background duties until cancelled: wake the claim loop when a scheduled or
    /// retrying job falls due (every poll interval when that is not known), renew the leases of
    /// running jobs (and notice jobs cancelled or taken over), heartbeat the worker row,
    /// reclaim expired leases of dead or hung workers, end jobs past their deadline to start, and
    /// hand back claimed-ahead jobs of executors paused since.
    ///
    /// Every commit to the store wakes the claim loop (this process's through the queue's wake
    /// handlers, other processes' through the store's ``OtherCommitsWatch``; a store in memory
    /// has no others), so the clock matters only for jobs falling due. The loop is still woken
    /// every second, a safety net that costs one read.
    func maintain() async {
        let clock = ContinuousClock()
        // A third of the lease leaves two chances to renew before it expires; at least every 5s
        // so that `jobq status` sees the worker alive and cancellations are noticed quickly.
        let renewEvery = min(options.lease / 3, .seconds(5))
        let reclaimEvery = max(options.pollInterval, .milliseconds(500))
        var lastRenewal = clock.now
        var lastReclaim = clock.now - reclaimEvery
        var lastCancellationCheck = clock.now
        var lastPoke = clock.now
        let backlogEvery = metrics == nil ? nil : options.backlogMetricsInterval
        var lastBacklog: ContinuousClock.Instant?
        var refusedExpiries = RefusedExpiries()
        while !Task.isCancelled {
            try? await Task.sleep(for: options.pollInterval)
            if Task.isCancelled { break }
            let now = clock.now
            let wakeLoop = state.withLock { state in
                state.drainDeadline != nil || state.nextDue.isDue(at: Date().timeIntervalSince1970)
            }
            if wakeLoop || now - lastPoke >= .seconds(1) {
                lastPoke = now
                signal.poke()
            }
            if now - lastRenewal >= renewEvery {
                lastRenewal = now
                lastCancellationCheck = now
                await renewLeases()
            } else if now - lastCancellationCheck >= options.cancellationCheckInterval {
                lastCancellationCheck = now
                await stopLostJobs()
            }
            if let backlogEvery, lastBacklog.map({ now - $0 >= backlogEvery }) ?? true {
                lastBacklog = now
                await recordBacklog()
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
                    logger.storeFailure(.error, error, "reclaiming expired leases failed: \(error)")
                }
                await expireOverdueJobs(&refusedExpiries)
                await releasePausedBuffered()
            }
        }
    }

    /// Ends jobs whose deadline to start passed while they waited (``JobOptions/expiresAt``),
    /// for every queue: a job waiting in a queue no worker serves still ends on time. A job the
    /// store refuses to end is reported once and passed over for a while, so that it holds up no
    /// other job's expiry.
    private func expireOverdueJobs(_ refused: inout RefusedExpiries) async {
        do {
            let sweep = try await queue.store.expireOverdueJobs(skipping: refused.current(at: .now))
            if sweep.ended > 0 {
                logger.info("\(sweep.ended) job(s) expired before they started")
                // Dependents a cancel policy did not end may be ready now.
                signal.poke(workArrived: true)
            }
            for (id, error) in sweep.refused.sorted(by: { $0.key < $1.key }) {
                refused.note(id, at: .now)
                logger.error(
                    "job \(id) is past its deadline to start, but the store refused to end it (\(error)); the other overdue jobs are ended, and it is tried again in \(DurationParser.format(RefusedExpiries.retryAfter))"
                )
            }
        } catch {
            logger.storeFailure(
                .error, error, "ending jobs past their deadline to start failed: \(error); trying again shortly")
        }
    }

    /// Reads the job counts per queue and state into the `jobq_queue_jobs` gauge.
    private func recordBacklog() async {
        do {
            metrics?.record(try await queue.status())
        } catch {
            logger.storeFailure(
                .warning, error, "reading job counts for the jobq_queue_jobs gauge failed: \(error); trying again later"
            )
        }
    }

    /// Stops running jobs that are no longer this pool's: cancelled by an operator in any
    /// process, or taken over. A read, so it can run often.
    private func stopLostJobs() async {
        let ids = state.withLock { state in state.running.filter { $0.value.interruption == nil }.map(\.key) }
        guard !ids.isEmpty, let lost = try? await queue.store.lostJobs(ids, workerID: workerID), !lost.isEmpty else {
            return
        }
        stop(lost)
    }

    /// Stops the attempts of `lost` jobs (cancelled or taken over) that are still running. A job
    /// whose executor finished a moment before, its outcome on its way to the store, is not
    /// stopped nor said: its outcome is fenced like any other.
    private func stop(_ lost: some Sequence<JobID>) {
        let races = state.withLock { state in
            lost.compactMap { id in state.interrupt([id], because: .lost).first.map { (id, $0) } }
        }
        let stopped = races.filter { $0.1.resolve(.interrupted) }.map(\.0)
        guard !stopped.isEmpty else { return }
        logger.info(
            "stopping \(stopped.count) job(s) that were cancelled or taken over: \(stopped.sorted().map(String.init).joined(separator: ", "))"
        )
    }

    private func renewLeases() async {
        // Only the jobs this pool holds: running, buffered, or stopped with an outcome not yet
        // written (a release at shutdown). Of those, the ones still running are checked for loss.
        let (held, watched) = state.withLock { state in
            (
                state.running.filter { $0.value.interruption != .lost }.map(\.key),
                state.running.filter { $0.value.interruption == nil }.map(\.key)
            )
        }
        do {
            try await queue.store.heartbeatWorker(id: workerID)
            let owned = try await queue.store.renewLeases(held, workerID: workerID, lease: options.lease)
            let lost = watched.filter { !owned.contains($0) }
            guard !lost.isEmpty else { return }
            stop(lost)
        } catch {
            logger.storeFailure(
                .error, error, "renewing leases failed: \(error); jobs keep running and the renewal is retried")
        }
    }
}

/// Overdue jobs the store refused to end (``ExpirySweep/refused``), each passed over by the
/// sweeps for ``retryAfter``: what refused it (a trigger, a constraint) may have been fixed
/// since, and a job that is never tried again would wait forever.
struct RefusedExpiries {
    static let retryAfter = Duration.seconds(600)
    /// At most this many are remembered; the oldest is forgotten (and tried again) first.
    static let capacity = 1000
    private var since: [JobID: ContinuousClock.Instant] = [:]

    mutating func note(_ id: JobID, at now: ContinuousClock.Instant) {
        since[id] = now
        if since.count > Self.capacity, let oldest = since.min(by: { $0.value < $1.value }) {
            since[oldest.key] = nil
        }
    }

    /// The ids to skip now; forgets those refused longer than ``retryAfter`` ago.
    mutating func current(at now: ContinuousClock.Instant) -> Set<JobID> {
        since = since.filter { now - $0.value < Self.retryAfter }
        return Set(since.keys)
    }
}
