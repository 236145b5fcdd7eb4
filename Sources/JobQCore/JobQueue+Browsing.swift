import Foundation

extension JobQueue {
    // MARK: Browsing (the dashboard's reads and actions)

    /// Jobs newest first, filtered as `query` says.
    ///
    /// ```swift
    /// let dead = try await queue.jobs(matching: JobQuery(queue: "mail", state: .dead))
    /// ```
    public func jobs(matching query: JobQuery) async throws -> [Job] {
        guard (1...1000).contains(query.limit) else {
            throw JobQueueError.invalidInput("limit must be from 1 to 1000, got \(query.limit)")
        }
        return try await store.jobs(
            where: query.combinedFilter, page: JobPage(limit: query.limit, before: query.before, newestFirst: true))
    }

    /// Deletes a finished job (succeeded, dead or cancelled) and its events, as ``prune(olderThan:states:)``
    /// does for old ones. Jobs of workflows and lanes are refused (their workflow or lane still
    /// refers to them): they go with `prune` once finished.
    ///
    /// ```swift
    /// try await queue.delete(deadJob.id)
    /// ```
    ///
    /// - Throws: ``JobQueueError/notFound(_:)`` for an unknown id, ``JobQueueError/invalidState(_:)``
    ///   for a job that has not finished or belongs to a workflow or lane; nothing changes then.
    public func delete(_ id: JobID) async throws {
        try await store.delete(id)
    }

    /// How many jobs of `queues` finished in each `interval` of the last `window` (the
    /// dashboard's throughput over the last hour), in queue name order. Reads only jobs finished
    /// in the window, by index.
    ///
    /// ```swift
    /// let hour = try await queue.throughput(of: ["default", "mail"], over: .seconds(3600), interval: .seconds(300))
    /// ```
    public func throughput(
        of queues: [String], over window: Duration = .seconds(3600), interval: Duration = .seconds(300)
    ) async throws -> [QueueThroughput] {
        // Checked before dividing: a zero interval must be an error, not a crash.
        guard interval > .zero, window >= interval, window / interval <= 1000 else {
            throw JobQueueError.invalidInput(
                "throughput needs an interval above 0 that fits the window at most 1000 times, got \(window) over \(interval)"
            )
        }
        let buckets = Int((window / interval).rounded(.up))
        return try await store.throughput(
            of: queues, since: Date().addingTimeInterval(-window.inSeconds), interval: interval.inSeconds,
            buckets: buckets)
    }

    /// Batches, newest first.
    public func batches(limit: Int = 100) async throws -> [BatchStatus] {
        guard (1...1000).contains(limit) else {
            throw JobQueueError.invalidInput("limit must be from 1 to 1000, got \(limit)")
        }
        return try await store.batches(limit: limit)
    }
}
