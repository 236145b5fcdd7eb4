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
/// Jobs that are only their own row (no unique key, dependency, lane, batch, partition or
/// expiry) go in one statement, one round trip for one job or a batch: the job rows, their
/// `enqueued` events, the shared write lock and the wake-up notification, which PostgreSQL
/// delivers at the commit (a rolled-back transaction wakes nobody). That statement can only
/// fail on the server's side (a lost connection, a lock or statement timeout, a full disk), not
/// on data jobq checked before it; when it does, PostgreSQL aborts the application's
/// transaction, as with any failed statement of its own. Pass `savepoint: true` to keep the
/// application's transaction usable after such an error, at two more round trips. On a
/// connection outside a transaction block (no `BEGIN`), PostgreSQL commits that statement on
/// its own: the job and its event at once, as `queue.enqueue` would (a statement cannot tell
/// PostgreSQL's implicit transaction from a block); with `savepoint: true` jobq refuses such a
/// connection instead.
///
/// Anything else (a unique key, a dependency, a lane, a batch), a submission or an emit runs
/// inside a savepoint: if jobq throws, none of it stays, even when the application goes on and
/// commits its own rows. Those take jobq's write lock exclusively until the application's
/// transaction ends, as jobq's own rule writes do: keep such transactions short.
///
/// - Throws: `JobQueueError.invalidState` when the connection is not in a transaction (for
///   what runs in a savepoint);
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
        _ executor: E.Type, _ input: E.Input, options: JobOptions = .init(), in connection: PostgresConnection,
        savepoint: Bool = false
    ) async throws -> Job {
        try await enqueue(try JobRequest(executor, input, options: options), in: connection, savepoint: savepoint)
    }

    /// Enqueues one job in the application's transaction on `connection`.
    ///
    /// ```swift
    /// try await queue.enqueue(JobRequest(executor: "mail", payloadJSON: "{}"), in: connection)
    /// // The application's transaction stays usable if jobq's statement fails:
    /// try await queue.enqueue(JobRequest(executor: "mail", payloadJSON: "{}"), in: connection, savepoint: true)
    /// ```
    ///
    /// - Parameters:
    ///   - request: the job.
    ///   - connection: the application's connection, inside its transaction.
    ///   - savepoint: run jobq's writes in a savepoint of their own, so that an error of the
    ///     server during the enqueue leaves the application's transaction usable (two more
    ///     round trips). Without it a plain job is one statement, and such an error aborts the
    ///     application's transaction as an error in one of its own statements would. Jobs with
    ///     a unique key, a dependency, a lane or a batch always get the savepoint.
    @discardableResult
    public func enqueue(_ request: JobRequest, in connection: PostgresConnection, savepoint: Bool = false)
        async throws -> Job
    {
        try await enqueueReportingDuplicates(contentsOf: [request], in: connection, savepoint: savepoint)[0].job
    }

    /// Enqueues many jobs in the application's transaction on `connection`: all or none.
    ///
    /// ```swift
    /// try await queue.enqueue(contentsOf: requests, in: connection)
    /// ```
    @discardableResult
    public func enqueue(
        contentsOf requests: some Sequence<JobRequest>, in connection: PostgresConnection, savepoint: Bool = false
    ) async throws -> [Job] {
        try await enqueueReportingDuplicates(contentsOf: requests, in: connection, savepoint: savepoint).map(\.job)
    }

    /// Enqueues like ``enqueue(contentsOf:in:savepoint:)`` and says which requests
    /// found their unique key already held (nothing new stored for those).
    ///
    /// ```swift
    /// let outcome = try await queue.enqueueReportingDuplicates(contentsOf: [request], in: connection)[0]
    /// ```
    public func enqueueReportingDuplicates(
        contentsOf requests: some Sequence<JobRequest>, in connection: PostgresConnection, savepoint: Bool = false
    ) async throws -> [Enqueued] {
        let requests = traced(requests)
        try StoreSQL.validate(requests)
        guard !requests.isEmpty else { return [] }
        let selfContained = requests.allSatisfy(\.isSelfContained)
        if selfContained, !savepoint {
            return try await callersServer().enqueueSelfContained(requests, in: connection).map {
                Enqueued(job: $0, existed: false)
            }
        }
        let lock: WriteLock = selfContained ? .shared : .exclusive
        return try await callersServer().inCallersTransaction(connection, lock: lock, audience: .workersAndFollowers) {
            db in try StoreSQL.enqueue(requests, db: db, now: StoreSQL.now())
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
        ) { db in try StoreSQL.submit(workflow, db: db, now: StoreSQL.now()) }
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
        try StoreSQL.checkEmit(event: event, payloadJSON: payloadJSON, dedupe: dedupe)
        return try await callersServer().inCallersTransaction(
            connection, lock: .exclusive, audience: .workersAndFollowers
        ) { db in
            try StoreSQL.emit(event: event, payloadJSON: payloadJSON, dedupe: dedupe, db: db, now: StoreSQL.now())
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
