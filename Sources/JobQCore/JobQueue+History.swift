import Foundation

extension JobQueue {
    // MARK: History

    /// What the store's workers did over the last `window`, in `buckets` buckets (oldest
    /// first): attempts by outcome, wait and run times, cancellations and the backlog; of one
    /// queue or executor, or of all.
    ///
    /// ```swift
    /// let day = try await queue.history(over: .seconds(86_400), buckets: 48, queue: "mail")
    /// let slowest = day.buckets.compactMap(\.waitP95).max()
    /// ```
    ///
    /// The backlog and the cancellations are by queue only: a history of one executor has none.
    ///
    /// - Throws: ``JobQueueError/invalidInput(_:)`` for a window shorter than a minute or longer
    ///   than 31 days, or buckets not from 1 to 1,440 or shorter than a minute.
    public func history(over window: Duration, buckets: Int = 60, queue: String? = nil, executor: String? = nil)
        async throws -> History
    {
        let seconds = window.inSeconds
        guard seconds >= 60, seconds <= 31 * 86_400 else {
            throw JobQueueError.invalidInput(
                "a history's window is from 1 minute to 31 days, not \(DurationParser.format(window))")
        }
        guard (1...1440).contains(buckets), seconds / Double(buckets) >= 60 else {
            throw JobQueueError.invalidInput(
                "a history has 1 to 1,440 buckets of a minute or more: \(buckets) over \(DurationParser.format(window)) is not"
            )
        }
        let bucketSeconds = seconds / Double(buckets)
        // Buckets end with the current minute, so that a live chart's last bar grows.
        let end = (Date().timeIntervalSince1970 / 60).rounded(.up) * 60
        return try await store.history(
            from: Date(timeIntervalSince1970: end - seconds), bucketSeconds: bucketSeconds, buckets: buckets,
            queue: queue, executor: executor)
    }
}
