import Foundation

extension JobQueue {
    // MARK: Finding jobs by what they carry

    /// The jobs `filter` matches, lowest id first, one page at a time.
    ///
    /// ```swift
    /// let filter = try JobFilter(#"state:dead /customer = "acme" finished<24h"#)
    /// var page = try await queue.jobs(where: filter, limit: 100)
    /// while !page.isEmpty {
    ///     for job in page { print(job.id, job.error ?? "") }
    ///     page = try await queue.jobs(where: filter, limit: 100, after: page.last?.id)
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - filter: Which jobs (``JobFilter``).
    ///   - limit: At most this many jobs, from 0 to 10,000.
    ///   - id: Only jobs with a greater id: the last id of the previous page.
    /// - Throws: ``JobQueueError/invalidInput(_:)`` for a limit out of range.
    public func jobs(where filter: JobFilter, limit: Int = 100, after id: JobID? = nil) async throws -> [Job] {
        guard (0...10_000).contains(limit) else {
            throw JobQueueError.invalidInput("limit must be from 0 to 10000, got \(limit); page with `after`")
        }
        return try await store.jobs(where: filter, page: JobPage(limit: limit, after: id))
    }

    /// How many jobs `filter` matches, without reading them.
    ///
    /// ```swift
    /// let stuck = try await queue.count(where: JobFilter("state:running started>1h"))
    /// ```
    public func count(where filter: JobFilter) async throws -> Int {
        try await store.countJobs(where: filter)
    }
}
