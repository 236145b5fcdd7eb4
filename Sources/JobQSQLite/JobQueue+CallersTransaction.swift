import Foundation
import GRDB
import JobQCore
import JobQSQL

/// Enqueueing in the application's own transaction, on the same SQLite file: the job commits
/// with the application's rows or not at all, so a crash between the two never loses a job or
/// runs one for a write that was rolled back.
///
/// ```swift
/// let dbPool = try DatabasePool(path: "app.sqlite")   // the application's own
/// let queue = try JobQueue(path: "app.sqlite")        // jobq's tables in the same file
/// try await dbPool.write { db in
///     try Order(id: 7).insert(db)
///     try queue.enqueue(SendReceipt.self, .init(order: 7), in: db)
/// }
/// ```
///
/// Everything the enqueue writes (the job, its event, a unique key, dependencies, a lane, a
/// batch) is in the application's transaction: if jobq throws, none of it stays, even when the
/// application goes on and commits its own rows. A job that is only its own row (no unique key,
/// dependency, lane, batch, partition or expiry) is one INSERT, which SQLite undoes whole if it
/// fails; anything more goes in a savepoint. Workers, here and in other
/// processes, are woken once the transaction commits; a rolled-back one wakes nobody.
///
/// - Throws: `JobQueueError.invalidState` outside a write transaction;
///   `JobQueueError.invalidInput` when `db` is a connection to another file, or for a bad
///   request; `JobQueueError.incompatibleStore` when the file needs `jobq migrate up`.
extension JobQueue {
    /// Enqueues one job for a typed executor in the application's transaction `db`.
    ///
    /// ```swift
    /// try dbPool.write { db in
    ///     try queue.enqueue(SendReceipt.self, .init(order: 7), in: db)
    /// }
    /// ```
    @discardableResult
    public func enqueue<E: Executor>(
        _ executor: E.Type, _ input: E.Input, options: JobOptions = .init(), in db: Database
    )
        throws -> Job
    {
        try enqueue(try JobRequest(executor, input, options: options), in: db)
    }

    /// Enqueues one job in the application's transaction `db`.
    ///
    /// ```swift
    /// try dbPool.write { db in try queue.enqueue(JobRequest(executor: "mail", payloadJSON: "{}"), in: db) }
    /// ```
    @discardableResult
    public func enqueue(_ request: JobRequest, in db: Database) throws -> Job {
        try enqueueReportingDuplicates(contentsOf: [request], in: db)[0].job
    }

    /// Enqueues many jobs in the application's transaction `db`: all of them or none.
    ///
    /// ```swift
    /// try dbPool.write { db in try queue.enqueue(contentsOf: requests, in: db) }
    /// ```
    @discardableResult
    public func enqueue(contentsOf requests: some Sequence<JobRequest>, in db: Database) throws -> [Job] {
        try enqueueReportingDuplicates(contentsOf: requests, in: db).map(\.job)
    }

    /// Enqueues like ``enqueue(contentsOf:in:)`` and says which requests found their unique key
    /// already held (nothing new stored for those).
    ///
    /// ```swift
    /// let outcome = try dbPool.write { db in try queue.enqueueReportingDuplicates(contentsOf: [request], in: db)[0] }
    /// ```
    public func enqueueReportingDuplicates(contentsOf requests: some Sequence<JobRequest>, in db: Database) throws
        -> [Enqueued]
    {
        let requests = traced(requests)
        try StoreSQL.validate(requests)
        let store = try callersStore()
        // One self-contained job is one INSERT (its event is in its row): atomic by itself.
        let atomic = requests.count == 1 && requests[0].isSelfContained
        let outcomes = try store.inCallersTransaction(db, atomic: atomic) { transaction in
            try StoreSQL.enqueue(requests, db: transaction, now: StoreSQL.now())
        }
        db.afterNextTransaction(onCommit: { [self] _ in
            store.callerCommitted()
            committed(outcomes)
        })
        return outcomes
    }

    /// Submits a workflow in the application's transaction `db`.
    ///
    /// ```swift
    /// let id = try dbPool.write { db in try queue.submit(Workflow(.sequence(fetch, build)), in: db) }
    /// ```
    @discardableResult
    public func submit(_ workflow: Workflow, in db: Database) throws -> WorkflowID {
        _ = try WorkflowValidation.validate(workflow)
        let store = try callersStore()
        let id = try store.inCallersTransaction(db) { transaction in
            try StoreSQL.submit(workflow, db: transaction, now: StoreSQL.now())
        }
        db.afterNextTransaction(onCommit: { [self] _ in
            store.callerCommitted()
            wakeWorkers()
        })
        return id
    }

    /// Submits a job tree in the application's transaction `db`.
    ///
    /// ```swift
    /// let id = try dbPool.write { db in try queue.submit(tree, input: "a-cookbook", in: db) }
    /// ```
    @discardableResult
    public func submit(
        _ tree: TreeNode, input: some Encodable & Sendable, name: String? = nil, maxJobs: Int = JobTree.defaultMaxJobs,
        in db: Database
    ) throws -> WorkflowID {
        try submit(try Self.workflow(of: tree, input: input, name: name, maxJobs: maxJobs), in: db)
    }

    /// Emits an event (one job per active task registered for it) in the application's
    /// transaction `db`.
    ///
    /// ```swift
    /// try dbPool.write { db in
    ///     try Payment(order: 1042).insert(db)
    ///     try queue.emit("order.paid", payloadJSON: #"{"order": 1042}"#, in: db)
    /// }
    /// ```
    @discardableResult
    public func emit(_ event: String, payloadJSON: String = "{}", dedupe: String? = nil, in db: Database) throws
        -> Emitted
    {
        try StoreSQL.checkEmit(event: event, payloadJSON: payloadJSON, dedupe: dedupe)
        let store = try callersStore()
        // A wait's filter may compare payload numbers by jobq's SQL function, which the
        // application's connection may not have yet.
        SQLiteStore.addFunctions(db)
        let emitted = try store.inCallersTransaction(db) { transaction in
            try StoreSQL.emit(
                event: event, payloadJSON: payloadJSON, dedupe: dedupe, db: transaction, now: StoreSQL.now())
        }
        db.afterNextTransaction(onCommit: { [self] _ in
            store.callerCommitted()
            if !emitted.deduplicated { wakeWorkers() }
        })
        return emitted
    }

    private func callersStore() throws -> SQLiteStore {
        guard let store = sqliteStore else {
            throw JobQueueError.invalidState(
                "this queue's store is not SQLite: enqueue in a GRDB transaction only on a queue opened with JobQueue(path:)"
            )
        }
        return store
    }
}
