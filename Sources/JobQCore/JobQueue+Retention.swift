import Foundation

/// Retention: how long finished jobs and events are kept, and the cleaner that deletes the rest.
extension JobQueue {
    /// Sets how long `queue` keeps its finished jobs (nil: back to the store's default, see
    /// ``setDefaultRetention(_:)``). Worker pools' cleaners apply it from their next pass.
    ///
    /// With `states`, only those states' periods are set: the others keep the queue's own
    /// setting, or, if it never had one, follow the store's default as it changes.
    ///
    /// ```swift
    /// try await queue.setRetention(QueueRetention(succeeded: .seconds(86_400)), for: "thumbnails")
    /// try await queue.setRetention(QueueRetention(succeeded: nil, dead: nil, cancelled: nil), for: "audit")  // for ever
    /// // Only succeeded jobs: dead and cancelled ones follow `jobq retention`.
    /// try await queue.setRetention(QueueRetention(succeeded: .seconds(3600)), for: "mail", states: [.succeeded])
    /// ```
    /// - Throws: ``JobQueueError/invalidInput(_:)`` for a period that is not positive, or a
    ///   state in `states` that is not final.
    public func setRetention(
        _ retention: QueueRetention?, for queue: String, states: Set<JobState> = [.succeeded, .dead, .cancelled]
    ) async throws {
        if let state = states.first(where: { !$0.isFinal }) {
            throw JobQueueError.invalidInput(
                "only finished jobs are deleted: retention applies to succeeded, dead and cancelled, not \(state.rawValue)"
            )
        }
        try retention?.check()
        guard !queue.isEmpty else {
            throw JobQueueError.invalidInput("the queue name is empty: name the queue whose retention to set")
        }
        try Label.check(queue, what: "queue name")
        try await store.setRetention(retention, for: queue, states: states)
    }

    /// How long `queue` keeps its finished jobs: its own retention, or the store's default.
    public func retention(for queue: String) async throws -> QueueRetention {
        let settings = try await store.retentionSettings()
        return settings.queues[queue] ?? settings.store.jobs
    }

    /// Sets the store-wide retention: finished jobs of queues without their own, and events.
    ///
    /// ```swift
    /// try await queue.setDefaultRetention(StoreRetention(jobs: .standard, events: .seconds(14 * 86_400)))
    /// ```
    public func setDefaultRetention(_ retention: StoreRetention) async throws {
        try retention.jobs.check()
        if let events = retention.events, events <= .zero {
            throw JobQueueError.invalidInput(
                "keeping events for \(DurationParser.format(events)) would delete them as they are written: give a "
                    + "positive period such as 30d, or keep them (nil; `forever` on the command line)")
        }
        if let events = retention.events { try DurationParser.checkStorable(events, what: "keeping events") }
        try await store.setDefaultRetention(retention)
    }

    /// The store-wide retention, and the queues with retention of their own.
    public func retentionSettings() async throws -> (store: StoreRetention, queues: [String: QueueRetention]) {
        try await store.retentionSettings()
    }

    /// Jobs per cleaner transaction, and the pause between two: small enough that a claim or
    /// a completion waiting behind one barely notices (`jobq-bench`'s pick-up latency beside
    /// the cleaner), at the price of a slower pass (about 8,000 jobs a second).
    public static let cleanerBatch = 100
    public static let cleanerPause: Duration = .milliseconds(10)

    /// The cleaner's lease: at most one cleaner runs per store at a time.
    static let cleanerLease = "cleaner"

    /// One cleaner pass, unless another process's cleaner holds the lease: deletes finished jobs
    /// past their queue's retention (oldest first, in transactions of `batch` jobs (3 × `batch` events), with their
    /// events), then events past the store's event retention, and finished workflows left
    /// without jobs. A finished job that something unfinished still refers to is kept.
    /// ``WorkerPool`` runs this about once a minute; call it yourself where no pool runs.
    ///
    /// ```swift
    /// let report = try await queue.clean()
    /// print("deleted \(report.jobs) jobs and \(report.events) events")
    /// ```
    @discardableResult
    public func clean(batch: Int = JobQueue.cleanerBatch, pause: Duration = JobQueue.cleanerPause) async throws
        -> CleanerReport
    {
        try await clean(holder: "clean-\(UUID().uuidString)", batch: batch, pause: pause)
    }

    func clean(holder: String, batch: Int, pause: Duration) async throws -> CleanerReport {
        // Short, renewed as the pass goes on: a cleaner killed mid-pass holds the others off
        // for no longer than this.
        let leaseLength = Duration.seconds(15)
        guard try await store.acquireLease(Self.cleanerLease, holder: holder, for: leaseLength) else {
            return CleanerReport(ran: false)
        }
        var report = CleanerReport()
        var lastRenewal = ContinuousClock.now
        // Renews the lease as the pass goes on; false once another cleaner took it over.
        func stillHeld() async throws -> Bool {
            guard ContinuousClock.now - lastRenewal > leaseLength / 3 else { return true }
            lastRenewal = ContinuousClock.now
            return try await store.acquireLease(Self.cleanerLease, holder: holder, for: leaseLength)
        }
        let now = Date().timeIntervalSince1970
        let settings = try await store.retentionSettings()
        for (queue, retention) in try await store.retentionByQueue() {
            for state in [JobState.succeeded, .dead, .cancelled] {
                guard let keep = retention.keeps(state) else { continue }
                let cutoff = now - keep.inSeconds
                while true {
                    guard !Task.isCancelled, try await stillHeld() else { return report }
                    let deleted = try await store.cleanFinished(
                        queue: queue, state: state, finishedBefore: cutoff, limit: batch)
                    report.jobs += deleted
                    if deleted < batch { break }
                    // Small transactions with room between them: workers' claims and
                    // completions never wait long behind the cleaner.
                    try await Task.sleep(for: pause)
                }
                report.keptForReferences += try await store.keptForReferences(
                    queue: queue, state: state, finishedBefore: cutoff)
            }
        }
        if let events = settings.store.events {
            while true {
                guard !Task.isCancelled, try await stillHeld() else { return report }
                let deleted = try await store.cleanEvents(before: now - events.inSeconds, limit: batch * 3)
                report.events += deleted
                if deleted < batch * 3 { break }
                try await Task.sleep(for: pause)
            }
            // The history goes with the events it summarizes.
            try await store.cleanHistory(beforeMinute: Int64((now - events.inSeconds) / 60))
        }
        try await store.cleanFinishedWorkflows(finishedBefore: now)
        try await store.releaseLease(Self.cleanerLease, holder: holder)
        return report
    }
}
