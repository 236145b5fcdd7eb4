import Foundation

extension JobQueue {
    // MARK: Acting on many jobs at once

    /// Retries, cancels or deletes every job `filter` matches, in batches, each job exactly as
    /// the one-job action would (same checks, same events); what that action refuses (deleting
    /// a running job, retrying a succeeded one) is skipped and counted by reason.
    ///
    /// ```swift
    /// let report = try await queue.perform(.retry, where: JobFilter(#"state:dead /customer = "acme""#))
    /// print("retried \(report.changed), skipped \(report.skipped)")
    /// ```
    ///
    /// Workers keep running beside it: each batch is one transaction sized to hold the store's
    /// write lock for about 50 ms. Jobs created after the action starts are left alone. An
    /// action interrupted midway (cancelled, or its process killed) has committed whole batches
    /// only; running it again finds what is left, so it can be rerun safely. When it ends it
    /// writes one ``EventKind/bulk`` event with its report.
    ///
    /// - Parameters:
    ///   - action: What each matching job gets.
    ///   - filter: Which jobs (``JobFilter``).
    ///   - through: The newest job it may act on, for an action confirmed earlier (the newest job
    ///     when it was counted); nil for the newest job now.
    ///   - progress: Called after each batch commits.
    public func perform(
        _ action: BulkAction, where filter: JobFilter, through: JobID? = nil,
        progress: (@Sendable (BulkActionProgress) -> Void)? = nil
    ) async throws -> BulkActionReport {
        var report = BulkActionReport(action: action, filter: filter.expression)
        // The newest job now bounds the walk: a producer adding matching jobs cannot keep it going.
        var newest = try await newestJobID() ?? 0
        if let through { newest = min(newest, through) }
        let bounded = filter.through(newest)
        let total = try await store.countJobs(where: bounded)
        var batchSize = 100
        var after: JobID?
        var done = 0
        while true {
            try Task.checkCancellation()
            let ids = try await store.jobIDs(
                where: filter, page: JobPage(limit: batchSize, after: after, through: newest))
            guard let last = ids.last else { break }
            let started = ContinuousClock.now
            report = try await store.perform(action, on: ids, where: filter, into: report)
            let took = ContinuousClock.now - started
            if action == .retry, report.changed > 0 { wakeWorkers() }
            done += ids.count
            progress?(BulkActionProgress(done: done, total: max(total, done), report: report))
            guard ids.count == batchSize else { break }
            after = last
            // Sized so that a batch holds the write lock for 25-100 ms: enough jobs per commit to
            // be quick, few enough that a worker's next claim waits no longer than that.
            if took < .milliseconds(25) {
                batchSize = min(batchSize * 2, 2000)
            } else if took > .milliseconds(100) {
                batchSize = max(batchSize / 2, 10)
            }
        }
        try await store.recordBulkAction(report)
        return report
    }

    /// The id of the newest job in the store, nil when it has none: a bound for an action that
    /// must not reach jobs enqueued after it was decided on.
    package func newestJobID() async throws -> JobID? {
        try await store.jobs(where: .all, page: JobPage(limit: 1, newestFirst: true)).first?.id
    }
}
