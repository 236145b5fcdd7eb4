/// A claim made in the transaction that records a worker's completions: as its jobs finish,
/// the worker refills its buffer without a transaction of its own for the claim, and a job
/// the completions made ready (a sequence's next step, a dependent) can be claimed by the same
/// commit that unlocked it.
///
/// ```swift
/// let report = try await store.recordOutcomes(outcomes, starting: [], workerID: id,
///     claiming: ClaimRequest(queues: ["default"], limit: 32, lease: .seconds(60), startingNow: 0))
/// ```
package struct ClaimRequest: Sendable, Equatable {
    package var queues: [String]
    package var limit: Int
    package var lease: Duration
    /// How many of the claimed jobs go to free slots at once: their start is recorded by the
    /// claim, as ``JobStore/claim(queues:limit:workerID:lease:startingNow:)`` does.
    package var startingNow: Int

    package init(queues: [String], limit: Int, lease: Duration, startingNow: Int) {
        self.queues = queues
        self.limit = limit
        self.lease = lease
        self.startingNow = startingNow
    }
}

/// What a completion transaction with a claim did.
package struct CompletionReport: Sendable {
    /// The ids whose outcome, and those whose start, the fence refused.
    package var refusedOutcomes: Set<JobID>
    package var refusedStarts: Set<JobID>
    /// The jobs the claim took, now held by the worker.
    package var claimed: [ClaimedJob]
    /// Why the claim failed, if it did. It was undone alone: the outcomes and starts are
    /// committed, and the worker treats this as a failed claim (the queue is backed off).
    package var claimFailure: (any Error)?

    package init(
        refusedOutcomes: Set<JobID>, refusedStarts: Set<JobID>, claimed: [ClaimedJob] = [],
        claimFailure: (any Error)? = nil
    ) {
        self.refusedOutcomes = refusedOutcomes
        self.refusedStarts = refusedStarts
        self.claimed = claimed
        self.claimFailure = claimFailure
    }
}
