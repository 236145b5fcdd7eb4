import Foundation

extension JobQueue {
    // MARK: Batches

    /// Creates an open batch. Jobs join it with `JobOptions(batch: name)`; ``closeBatch(_:)``
    /// seals it. When it is closed and every member is final, `onComplete` is enqueued (always)
    /// and `onSuccess` (if all succeeded), each with `"batch": {"name", "counts", "results"}`
    /// added to its payload object, and a `batch` event is written: once, whatever crashes.
    ///
    /// ```swift
    /// try await queue.createBatch("nightly", onComplete: try JobRequest(executor: "echo", payloadJSON: "{}"))
    /// ```
    @discardableResult
    public func createBatch(_ name: String, onComplete: JobRequest? = nil, onSuccess: JobRequest? = nil) async throws
        -> BatchStatus
    {
        try await store.createBatch(name, onComplete: onComplete, onSuccess: onSuccess)
    }

    /// Seals a batch; it fires now if every member already finished (or it has none).
    @discardableResult
    public func closeBatch(_ name: String) async throws -> BatchStatus {
        let batch = try await store.closeBatch(name)
        if batch.state == .fired { wakeWorkers() }
        return batch
    }

    /// The batch's counters and callbacks, or nil.
    public func batch(_ name: String) async throws -> BatchStatus? {
        try await store.batch(name)
    }

    // MARK: Tracking sets

    /// Creates a tracking set: it fires a `tracking` event with every member's latest result
    /// each time all members have a new result since the last firing.
    ///
    /// ```swift
    /// try await queue.addTrackingSet("prices", members: [.executor("fetch-eur"), .executor("fetch-usd")])
    /// for try await event in queue.events(EventFilter(kinds: [.tracking])) { ... }
    /// ```
    @discardableResult
    public func addTrackingSet(_ name: String, members: [TrackingMember]) async throws -> TrackingSetStatus {
        try await store.addTrackingSet(name, members: members)
    }

    public func trackingSets() async throws -> [TrackingSetStatus] {
        try await store.trackingSets()
    }

    public func removeTrackingSet(_ name: String) async throws {
        try await store.removeTrackingSet(name)
    }
}
