import Foundation

extension JobQueue {
    /// Copies this queue's whole store into `destination`: a SQLite store into PostgreSQL (the
    /// way up when one machine no longer suffices) or back. Everything comes along: jobs in
    /// every state with their attempts, results, errors, progress and partitions; the event
    /// feed in its order; workflows, trees, lanes, batches, tracking sets, dependencies and
    /// unique holds; schedules with their next occurrence, triggers, queue settings (pauses,
    /// limits, retention), payload indexes and data-migration records. Jobs, workflows and
    /// groups keep their ids.
    ///
    /// The destination must be empty, or hold a copy of this same store that did not finish
    /// (a copy killed midway): the copy then goes on from where it stopped, and writes nothing
    /// twice. Workers must not be running on either side: the copy refuses while any is live on
    /// the source (unless ``StoreCopyOptions/allowLiveWorkers``) or on the destination; start
    /// workers on the destination once the copy has returned.
    ///
    /// It ends by counting and checksumming every table on both sides
    /// (``StoreCopyReport/verified``); event ids that had to change are in
    /// ``StoreCopyReport/eventIDs``, which translates a follower's saved cursor.
    ///
    /// ```swift
    /// let source = try JobQueue(path: "jobq.sqlite")
    /// let destination = try await JobQueue(postgres: "postgres://jobq@db.internal/app")
    /// let report = try await source.copy(to: destination) { print("\($0.table) \($0.copied)/\($0.total)") }
    /// guard report.verified else { fatalError("the copy differs from its source") }
    /// ```
    ///
    /// - Throws: ``JobQueueError/invalidState(_:)`` when workers are live or the destination
    ///   holds other data (nothing written); ``JobQueueError/incompatibleStore(_:)`` when the two
    ///   stores' schemas differ; a store's error when one goes away midway (run the copy again:
    ///   it goes on from where it stopped).
    public func copy(
        to destination: JobQueue, options: StoreCopyOptions = StoreCopyOptions(),
        progress: @escaping @Sendable (StoreCopyProgress) -> Void = { _ in }
    ) async throws -> StoreCopyReport {
        try await store.copyEverything(to: destination.store, options: options, progress: progress)
    }

    /// What this store records of the copy that filled it (``copy(to:options:progress:)``); nil
    /// when it was not filled by one. A follower that resumes here with a cursor saved on the
    /// source store needs it translated when it is at or below
    /// ``StoreCopyRecord/renumberedThrough``.
    ///
    /// ```swift
    /// let record = try await queue.copyRecord()
    /// ```
    public func copyRecord() async throws -> StoreCopyRecord? {
        try await store.copyRecord()
    }
}
