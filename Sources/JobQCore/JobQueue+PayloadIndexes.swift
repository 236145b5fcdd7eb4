import Foundation

extension JobQueue {
    // MARK: Indexes on payload members

    /// Adds an index on a payload member, so that filters on it (`/customer = "acme"`,
    /// ``JobFilter``) look the jobs up instead of reading every job: worth it for a member that
    /// operators search often in a store of millions of jobs. On SQLite it serves equality and
    /// ranges of strings and numbers; on PostgreSQL equality of strings. Every job's insert pays
    /// for one more index entry.
    ///
    /// ```swift
    /// try await queue.addPayloadIndex("/customer")
    /// ```
    ///
    /// Building it holds the store's writes (workers wait) for about a second per million jobs.
    /// Adding one that exists changes nothing.
    ///
    /// - Throws: ``JobQueueError/invalidInput(_:)`` for a pointer that names no object member.
    @discardableResult
    public func addPayloadIndex(_ pointer: String) async throws -> PayloadIndex {
        _ = try PayloadPointer(pointer)
        return try await store.addPayloadIndex(pointer)
    }

    /// Drops the index ``addPayloadIndex(_:)`` added on `pointer`.
    ///
    /// - Throws: ``JobQueueError/notFound(_:)`` when there is none.
    public func removePayloadIndex(_ pointer: String) async throws {
        try await store.removePayloadIndex(pointer)
    }

    /// The payload members with an index, by pointer.
    public func payloadIndexes() async throws -> [PayloadIndex] {
        try await store.payloadIndexes()
    }
}
