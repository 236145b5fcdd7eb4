/// A claim that failed part of the way: on one queue (`queue`), or before any queue was read
/// (`queue` is nil: promoting due jobs, the connection, the transaction).
///
/// A store that commits each queue's claim on its own (PostgreSQL's one-statement claims) may
/// have committed jobs for earlier queues before a later one failed: they are in `claimed`,
/// running under the worker's lease, and the caller runs them like any claimed job. Dropping
/// them would leave them `running` until their lease expires, with an attempt counted that
/// never ran. A store that claims in one transaction rolls it back, and `claimed` is empty.
///
/// The worker pool backs off the failing queue and goes on claiming the others, so a queue
/// whose claim keeps failing (a lock held elsewhere, a row the server cannot read) costs the
/// other queues nothing.
package struct QueueClaimFailure: Error, CustomStringConvertible {
    package var queue: String?
    package var claimed: [ClaimedJob]
    package var underlying: any Error

    package init(queue: String?, claimed: [ClaimedJob], underlying: any Error) {
        self.queue = queue
        self.claimed = claimed
        self.underlying = underlying
    }

    package var description: String {
        if let queue { return "claiming from queue '\(queue)' failed: \(underlying)" }
        return "claiming failed: \(underlying)"
    }

    /// The failure of a claim over several queues in which `queue`'s part threw `error`;
    /// `claimedBefore` are the jobs committed before it. A failure already said (by a part that
    /// claims in a transaction of its own) keeps its queue, or its lack of one.
    package static func wrapping(_ error: any Error, queue: String?, claimedBefore: [ClaimedJob]) -> QueueClaimFailure {
        if let failure = error as? QueueClaimFailure {
            return QueueClaimFailure(
                queue: failure.queue, claimed: claimedBefore + failure.claimed,
                underlying: failure.underlying)
        }
        return QueueClaimFailure(queue: queue, claimed: claimedBefore, underlying: error)
    }
}
