import JobQCore

/// The one loop over a worker's queues, whichever store claims: the queues in the worker's
/// order, paused ones passed over, a limited one claimed under its limits, due jobs made ready
/// once per claim, and what each queue may still give (the claim's limit less what the queues
/// before it gave; starts for the first `startingNow` jobs of the whole claim).
///
/// It decides and a store does: a store steps through it with round trips of its own. SQLite
/// runs every step in one transaction (`StoreSQL.claim`), having read the queues' settings and
/// made due jobs ready first; PostgreSQL sends an unlimited queue's claim as one statement
/// committed on its own, which says whether jobs fell due and whether the queue turned out to be
/// limited, and claims a limited queue in a transaction of its own (`ServerStore.claim`).
///
/// ```swift
/// var loop = ClaimLoop(request, settings: try QueueSettings.read(db))
/// while let step = loop.next() {
///     switch step {
///     case .promoteDue: try StoreSQL.promoteDue(db, now: now); loop.promoted()
///     case .claim(let part), .claimLimited(let part): loop.took(try StoreSQL.claim(db, part, ...))
///     }
/// }
/// ```
package struct ClaimLoop: Sendable {
    /// What a store does next.
    package enum Step: Sendable {
        /// Make due scheduled and retrying jobs ready.
        case promoteDue
        /// Claim a queue with no limit.
        case claim(QueuePart)
        /// Claim a queue with a concurrency or rate limit, counted under its row lock.
        case claimLimited(QueuePart)
    }

    /// One queue's part of a claim.
    package struct QueuePart: Sendable {
        package let queue: String
        /// How many jobs at most.
        package let limit: Int
        /// How many of them go to free slots at once: their start is recorded with the claim.
        package let startingNow: Int
        /// The queue's limits, when the store read them before the loop.
        package let limits: LimitedQueue?
        /// Whether the store read the queues' settings before the loop (else a limited queue's
        /// claim reads its own: ``limits`` is then nil whether the queue is limited or not).
        package let settingsRead: Bool
    }

    package let request: ClaimRequest
    /// The jobs claimed so far, in claim order.
    package private(set) var claimed: [ClaimedJob] = []
    private let settings: QueueSettings?
    private var index = 0
    private var promotedDue = false
    /// A claim found jobs fallen due: they are made ready and the queue claimed again.
    private var promotionWanted = false
    /// The queue's claim said it is limited: it is claimed again under its limits.
    private var limitFound = false
    /// The queue of the step under way (nil while promoting), which a failure is said by.
    private var current: String?

    /// A loop for `request`. `settings`: the queues' settings, read in the transaction that runs
    /// every step (due jobs are then made ready first); nil when each queue's claim is a round
    /// trip of its own that says what it found (``took(_:dueFound:limited:)``).
    package init(_ request: ClaimRequest, settings: QueueSettings?) {
        self.request = request
        self.settings = settings
        claimed.reserveCapacity(max(0, min(request.limit, 1024)))
    }

    /// The next step, or nil when the claim is done (its limit reached, or every queue claimed).
    package mutating func next() -> Step? {
        current = nil
        if settings != nil, !promotedDue { return .promoteDue }
        if promotionWanted { return .promoteDue }
        let queues = request.queues
        while index < queues.endIndex, settings?.paused.contains(queues[index]) == true { index += 1 }
        guard index < queues.endIndex, claimed.count < request.limit else { return nil }
        let queue = queues[index]
        current = queue
        let limits = settings?.limited[queue]
        let part = QueuePart(
            queue: queue, limit: request.limit - claimed.count,
            startingNow: max(0, request.startingNow - claimed.count), limits: limits,
            settingsRead: settings != nil)
        return limits != nil || limitFound ? .claimLimited(part) : .claim(part)
    }

    /// Due jobs were made ready.
    package mutating func promoted() {
        promotedDue = true
        promotionWanted = false
    }

    /// The step under way claimed `jobs`. `dueFound`: jobs on the worker's queues have fallen due
    /// (made ready once, then the queue is claimed again); `limited`: the queue has limits its
    /// claim did not count (claimed again under them).
    package mutating func took(_ jobs: [ClaimedJob], dueFound: Bool = false, limited: Bool = false) {
        claimed += jobs
        if dueFound, !promotedDue {
            promotionWanted = true
        } else if limited, !limitFound {
            limitFound = true
        } else {
            limitFound = false
            index += 1
        }
    }

    /// The claim's failure in the step under way, said by its queue (the worker backs that queue
    /// off and claims the others at once). `committed`: whether the jobs claimed before it were
    /// committed (steps that commit on their own) or roll back with it (one transaction).
    package func failure(_ error: any Error, committed: Bool) -> QueueClaimFailure {
        QueueClaimFailure.wrapping(error, queue: current, claimedBefore: committed ? claimed : [])
    }
}

/// What claims must respect of a store's queues: which are paused, and the limits of the others
/// (one small read of the queues with a setting).
package struct QueueSettings: Sendable {
    package var paused: Set<String> = []
    package var limited: [String: LimitedQueue] = [:]

    static func read(_ db: some SQLTransaction) throws -> QueueSettings {
        var settings = QueueSettings()
        let statement = try db.statement(sql: StoreSQL.queueSettingsSQL)
        defer { statement.reset() }
        while try statement.step() {
            let queue = LimitedQueue(statement)
            if queue.paused {
                settings.paused.insert(queue.name)
            } else if queue.isLimited {
                settings.limited[queue.name] = queue
            }
        }
        return settings
    }
}
