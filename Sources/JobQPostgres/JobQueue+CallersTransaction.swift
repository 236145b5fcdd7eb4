import Foundation
import JobQCore
import JobQSQL
import PostgresNIO

/// Enqueueing in the application's own transaction on PostgreSQL: the job commits with the
/// application's rows or not at all, so a crash between the two never loses a job or runs one
/// for a write that was rolled back.
///
/// ```swift
/// try await client.withTransaction { connection in
///     try await connection.query("INSERT INTO orders (id) VALUES (7)", logger: logger)
///     try await queue.enqueue(SendReceipt.self, .init(order: 7), in: connection)
/// }
/// ```
///
/// Everything the enqueue writes (the job, its event, a unique key, dependencies, a lane, a
/// batch) is in the application's transaction, inside a savepoint: if jobq throws, none of it
/// stays, even when the application goes on and commits its own rows. Workers are woken by the
/// notification PostgreSQL delivers at the commit; a rolled-back transaction wakes nobody.
///
/// A job that is only its own row (no unique key, dependency, lane or batch) takes jobq's write
/// lock shared, beside workers' claims and completions. Any other enqueue, a submission or an
/// emit takes it exclusively until the application's transaction ends, as jobq's own rule
/// writes do: keep such transactions short.
///
/// - Throws: `JobQueueError.invalidState` when the connection is not in a transaction;
///   `JobQueueError.invalidInput` when it is to another database, or for a bad request.
extension JobQueue {
    /// Enqueues one job for a typed executor in the application's transaction on `connection`.
    ///
    /// ```swift
    /// try await client.withTransaction { connection in
    ///     try await queue.enqueue(SendReceipt.self, .init(order: 7), in: connection)
    /// }
    /// ```
    @discardableResult
    public func enqueue<E: Executor>(
        _ executor: E.Type, _ input: E.Input, options: JobOptions = .init(), in connection: PostgresConnection
    ) async throws -> Job {
        try await enqueue(try JobRequest(executor, input, options: options), in: connection)
    }

    /// Enqueues one job in the application's transaction on `connection`.
    ///
    /// ```swift
    /// try await queue.enqueue(JobRequest(executor: "mail", payloadJSON: "{}"), in: connection)
    /// ```
    @discardableResult
    public func enqueue(_ request: JobRequest, in connection: PostgresConnection) async throws -> Job {
        try await enqueueReportingDuplicates(contentsOf: [request], in: connection)[0].job
    }

    /// Enqueues many jobs in the application's transaction on `connection`: all or none.
    ///
    /// ```swift
    /// try await queue.enqueue(contentsOf: requests, in: connection)
    /// ```
    @discardableResult
    public func enqueue(contentsOf requests: some Sequence<JobRequest>, in connection: PostgresConnection) async throws
        -> [Job]
    {
        try await enqueueReportingDuplicates(contentsOf: requests, in: connection).map(\.job)
    }

    /// Enqueues like ``enqueue(contentsOf:in:)`` and says which requests
    /// found their unique key already held (nothing new stored for those).
    ///
    /// ```swift
    /// let outcome = try await queue.enqueueReportingDuplicates(contentsOf: [request], in: connection)[0]
    /// ```
    public func enqueueReportingDuplicates(
        contentsOf requests: some Sequence<JobRequest>, in connection: PostgresConnection
    ) async throws -> [Enqueued] {
        let requests = traced(requests)
        try SharedSQL.validate(requests)
        let lock: WriteLock = requests.allSatisfy(\.isSelfContained) ? .shared : .exclusive
        return try await callersServer().inCallersTransaction(connection, lock: lock, audience: .workersAndFollowers) {
            db in try SharedSQL.enqueue(requests, db: db, now: SharedSQL.now())
        }
    }

    /// Submits a workflow in the application's transaction on `connection`.
    ///
    /// ```swift
    /// let id = try await queue.submit(Workflow(.sequence(fetch, build)), in: connection)
    /// ```
    @discardableResult
    public func submit(_ workflow: Workflow, in connection: PostgresConnection) async throws -> WorkflowID {
        _ = try WorkflowValidation.validate(workflow)
        return try await callersServer().inCallersTransaction(
            connection, lock: .exclusive, audience: .workersAndFollowers
        ) { db in try SharedSQL.submit(workflow, db: db, now: SharedSQL.now()) }
    }

    /// Submits a job tree in the application's transaction on `connection`.
    ///
    /// ```swift
    /// let id = try await queue.submit(tree, input: "a-cookbook", in: connection)
    /// ```
    @discardableResult
    public func submit(
        _ tree: TreeNode, input: some Encodable & Sendable, name: String? = nil, maxJobs: Int = JobTree.defaultMaxJobs,
        in connection: PostgresConnection
    ) async throws -> WorkflowID {
        try await submit(try Self.workflow(of: tree, input: input, name: name, maxJobs: maxJobs), in: connection)
    }

    /// Emits an event (one job per active task registered for it) in the application's
    /// transaction on `connection`.
    ///
    /// ```swift
    /// try await queue.emit("order.paid", payloadJSON: #"{"order": 1042}"#, in: connection)
    /// ```
    @discardableResult
    public func emit(
        _ event: String, payloadJSON: String = "{}", dedupe: String? = nil, in connection: PostgresConnection
    ) async throws -> Emitted {
        try SharedSQL.checkEmit(event: event, payloadJSON: payloadJSON, dedupe: dedupe)
        return try await callersServer().inCallersTransaction(
            connection, lock: .exclusive, audience: .workersAndFollowers
        ) { db in
            try SharedSQL.emit(event: event, payloadJSON: payloadJSON, dedupe: dedupe, db: db, now: SharedSQL.now())
        }
    }

    private func callersServer() throws -> PostgresServer {
        guard let server = (store as? ServerStore)?.server as? PostgresServer else {
            throw JobQueueError.invalidState(
                "this queue's store is not PostgreSQL: enqueue on a PostgresConnection only on a queue opened with JobQueue(postgres:)"
            )
        }
        return server
    }
}
