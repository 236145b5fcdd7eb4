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
            guard !state.claimingEnded, !state.claimInFlight, state.drainDeadline == nil, state.started < jobLimit,
                let (wanted, startingNow) = state.refill(maximumPrefetch: options.prefetch, concurrency: concurrency)
            else { return nil }
            let open = state.claimBackoff.open(queues, at: now)
            guard !open.isEmpty else { return nil }
            state.claimInFlight = true
            state.nextDue = .unknown
            return ClaimRequest(queues: open, limit: wanted, lease: options.lease, startingNow: startingNow)
        }
    }

    /// Takes what a claim made with completions did: its jobs join the buffer (or are released
    /// at once when the pool has stopped claiming), a failure backs its queue off as the claim
    /// loop's own would; either way the claim loop is woken to start slots or claim itself.
    func claimedWithCompletions(_ request: ClaimRequest, _ result: CompletionBatcher.ClaimResult) {
        switch result {
        case .claimed(let jobs):
            let stopping = state.withLock { state in
                state.claimInFlight = false
                state.lastClaimShort = jobs.count < request.limit
                state.appendToBuffer(state.hold(jobs))
                return state.claimingEnded || state.drainDeadline != nil
            }
            if stopping { handBack { $0.takeAllBuffered() } }
            signal.poke(workArrived: !jobs.isEmpty)
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
