/// What a queue allows across every worker and machine (``JobQueue/setLimits(_:for:)``).
///
/// ```swift
/// try await queue.setLimits(QueueLimits(concurrency: 3), for: "licensed-tool")
/// ```
public struct QueueLimits: Sendable, Hashable, Codable {
    /// At most this many of the queue's jobs running at once; nil for no limit.
    public var concurrency: Int?

    public init(concurrency: Int? = nil) {
        self.concurrency = concurrency
    }
}
