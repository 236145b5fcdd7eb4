/// Which of a pool's queues it claims from now, after claims that failed.
///
/// A queue whose claim fails (a lock another session holds on its row, a row the server cannot
/// read) waits out a backoff while the pool goes on claiming its other queues; a failure that is
/// no one queue's (the connection, promoting due jobs) pauses every claim. Transient failures
/// wait 100 ms, doubling to 5 s; permanent ones 1 s, doubling to 1 min, since the data must be
/// changed before the claim can succeed. A successful claim of a queue clears its backoff.
struct ClaimBackoff: Sendable {
    private struct Entry: Sendable {
        var failures: Int
        var until: ContinuousClock.Instant
    }

    private var byQueue: [String: Entry] = [:]
    private var everyQueue: Entry?

    /// The queues a claim may try at `now`, in their order.
    func open(_ queues: [String], at now: ContinuousClock.Instant) -> [String] {
        if let everyQueue, everyQueue.until > now { return [] }
        guard !byQueue.isEmpty else { return queues }
        return queues.filter { byQueue[$0].map { $0.until <= now } ?? true }
    }

    /// Records a failure of `queue`'s claim (nil: of every queue's) and returns how long the
    /// queue now waits.
    mutating func failed(queue: String?, kind: StoreErrorKind, at now: ContinuousClock.Instant) -> Duration {
        let previous: Entry? = if let queue { byQueue[queue] } else { everyQueue }
        let failures = previous?.failures ?? 0
        let delay = Self.delay(afterFailures: failures + 1, kind: kind)
        let entry = Entry(failures: failures + 1, until: now + delay)
        if let queue { byQueue[queue] = entry } else { everyQueue = entry }
        return delay
    }

    /// Clears the backoff of queues a claim just read without failing.
    mutating func succeeded(_ queues: [String]) {
        everyQueue = nil
        guard !byQueue.isEmpty else { return }
        for queue in queues { byQueue[queue] = nil }
    }

    static func delay(afterFailures failures: Int, kind: StoreErrorKind) -> Duration {
        let (first, longest): (Duration, Duration) =
            kind == .transient ? (.milliseconds(100), .seconds(5)) : (.seconds(1), .seconds(60))
        return min(longest, first * (1 << min(failures - 1, 16)))
    }
}
