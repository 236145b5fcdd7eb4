import Foundation

/// Claims made in the transactions that record the pool's completions, where the store can
/// (``JobStore/claimsWithCompletions``): a busy pool refills its buffer as its jobs finish
/// without a transaction of its own for the claim, and the next step of a sequence, made ready
/// by the completion of the one before, is claimed by the commit that unlocked it. The claim
/// loop still claims whenever the buffer runs low between completions (an idle pool woken by
/// new work, a failed or short claim); the two never claim at once (``PoolState/claimInFlight``).
extension WorkerPool {
    /// What to claim with the completions about to be written: what the claim loop would claim
    /// now, or nil when it would not (the buffer is full enough, the pool drains, the job limit
    /// is reached, every queue is backed off, a claim is already being written).
    func claimToMakeWithCompletions() -> ClaimRequest? {
        let jobLimit = options.maximumJobs ?? Int.max
        let now = ContinuousClock.now
        return state.withLock { state in
            guard !state.claimingEnded, !state.claimInFlight, state.drainDeadline == nil, state.started < jobLimit
            else { return nil }
            let prefetch = state.prefetch(maximum: options.prefetch, concurrency: concurrency)
            let threshold = state.refillThreshold(maximum: options.prefetch, concurrency: concurrency)
            let (active, buffered) = (state.active, state.bufferedCount)
            let wanted = concurrency + prefetch - buffered - active
            guard buffered <= threshold, wanted > 0 else { return nil }
            let open = state.claimBackoff.open(queues, at: now)
            guard !open.isEmpty else { return nil }
            state.claimInFlight = true
            state.nextDue = .unknown
            return ClaimRequest(
                queues: open, limit: wanted, lease: options.lease,
                startingNow: buffered == 0 ? max(0, concurrency - active) : 0)
        }
    }

    /// Takes what a claim made with completions did: its jobs join the buffer (or are released
    /// at once when the pool has stopped claiming), a failure backs its queue off as the claim
    /// loop's own would; either way the claim loop is woken to start slots or claim itself.
    func claimedWithCompletions(_ request: ClaimRequest, _ result: CompletionBatcher.ClaimResult) {
        switch result {
        case .claimed(let jobs):
            let entries = jobs.map { (job: $0, race: AttemptRace()) }
            let stopping = state.withLock { state in
                state.claimInFlight = false
                state.lastClaimShort = jobs.count < request.limit
                for (job, race) in entries {
                    state.running[job.id] = PoolState.RunningJob(job: job, race: race, interruption: nil)
                }
                state.appendToBuffer(entries)
                return state.claimingEnded || state.drainDeadline != nil
            }
            if stopping { handBack { $0.takeAllBuffered() } }
            signal.poke(workArrived: !entries.isEmpty)
        case .failed(let error):
            state.withLock { $0.claimInFlight = false }
            let (failed, forGood) = noteClaimFailure(error, at: .now)
            if let failed, forGood { Task { await self.endUnreadableJobs(of: failed) } }
            signal.poke()
        case .notMade:
            state.withLock { $0.claimInFlight = false }
            signal.poke()
        }
    }
}
