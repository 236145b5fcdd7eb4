import Foundation

/// The event outbox: written in the transaction of each state change, read by cursor.
extension SQLStore {
    /// Events with an id greater than `cursor`, oldest first, at most `limit`.
    package func events(after cursor: Int64, filter: EventFilter, limit: Int) async throws -> [JobEvent] {
        try await read { db in try StoreSQL.events(db, after: cursor, filter: filter, limit: limit) }
    }

    /// The newest event id and the events after `cursor` up to it that match `filter` (at most
    /// `limit`): one read transaction, so the feed takes one hop per wake-up.
    package func eventsUpToNewest(after cursor: Int64, filter: EventFilter, limit: Int) async throws -> (
        newest: Int64, events: [JobEvent]
    ) {
        try await read(.small) { db in
            let newest = try StoreSQL.newestEventID(db)
            guard newest > cursor else { return (newest, []) }
            return (
                newest, try StoreSQL.events(db, after: cursor, filter: filter, limit: limit).filter { $0.id <= newest }
            )
        }
    }

    /// The newest event id: the cursor of "from now on".
    package func latestEventID() async throws -> Int64 {
        try await read(.small) { db in try StoreSQL.newestEventID(db) }
    }
}

extension StoreSQL {
    /// Appends an event inside the caller's transaction.
    static func appendEvent(
        _ db: some SQLTransaction, job: JobID?, kind: EventKind, queue: String?, executor: String?, batch: String?,
        data: String?, now: Double, workflow: WorkflowID? = nil
    ) throws {
        // The one way events are written: through PendingEvents' INSERT, flushed at once.
        var events = PendingEvents(now: now)
        events.append(
            job: job, kind: kind, queue: queue, executor: executor, batch: batch, data: data, workflow: workflow)
        try events.flush(db)
    }

    /// Events of one transaction waiting to be inserted together: one multi-row INSERT per flush
    /// (up to 64 rows each) instead of one statement per event, which is what a claim or a
    /// batch of completions writes most. Events keep the order they were appended in; a caller
    /// that inserts events another way in the same transaction flushes these first.
    struct PendingEvents {
        private struct Row {
            let job: JobID?
            let kind: EventKind
            let queue: String?
            let executor: String?
            let batch: String?
            let data: String?
            let workflow: WorkflowID?
        }

        /// Rows per INSERT at most: 64 x 8 parameters stay far below SQLite's limit.
        static let maximumRows = 64
        private var rows: [Row] = []
        let now: Double

        init(now: Double) { self.now = now }

        mutating func append(
            job: JobID?, kind: EventKind, queue: String?, executor: String?, batch: String?, data: String?,
            workflow: WorkflowID? = nil
        ) {
            rows.append(
                Row(
                    job: job, kind: kind, queue: queue, executor: executor, batch: batch, data: data, workflow: workflow
                ))
        }

        /// The `started` event of a claimed attempt.
        mutating func append(startedOf job: ClaimedJob, workerID: String) {
            append(
                job: job.id, kind: .started, queue: job.queue, executor: job.executor, batch: job.batch,
                data: job.startedEventData(workerID: workerID), workflow: job.workflowID)
        }

        var isEmpty: Bool { rows.isEmpty }

        mutating func flush(_ db: some SQLTransaction) throws {
            for chunk in rows.chunks(of: Self.maximumRows) {
                let insert = try db.statement(sql: Self.insertSQL[chunk.count])
                for (offset, row) in chunk.enumerated() {
                    let base = Int32(offset * 8)
                    insert.bind(base + 1, row.job)
                    insert.bind(base + 2, row.kind.rawValue)
                    insert.bind(base + 3, row.queue)
                    insert.bind(base + 4, row.executor)
                    insert.bind(base + 5, row.batch)
                    insert.bind(base + 6, row.data)
                    insert.bind(base + 7, now)
                    insert.bind(base + 8, row.workflow)
                }
                try insert.run()
            }
            rows.removeAll(keepingCapacity: true)
        }

        /// `insertSQL[n]` inserts n events.
        static let insertSQL: [String] = (0...maximumRows).map { count in
            "INSERT INTO events (job_id, kind, queue, executor, batch, data, created_at, workflow_id) VALUES "
                + Array(repeating: "(?, ?, ?, ?, ?, ?, ?, ?)", count: count).joined(separator: ", ")
        }
    }

    static func events(_ db: some SQLTransaction, after cursor: Int64, filter: EventFilter, limit: Int) throws
        -> [JobEvent]
    {
        var conditions = ["id > ?"]
        var arguments: SQLArguments = [cursor]
        if !filter.jobIDs.isEmpty {
            conditions.append("job_id IN (\(db.dialect.integers(in: "?")))")
            arguments += [jsonArray(filter.jobIDs.sorted())]
        }
        if let executor = filter.executor {
            conditions.append("executor = ?")
            arguments += [executor]
        }
        if let queue = filter.queue {
            conditions.append("queue = ?")
            arguments += [queue]
        }
        if let batch = filter.batch {
            conditions.append("batch = ?")
            arguments += [batch]
        }
        if let workflow = filter.workflow {
            conditions.append("workflow_id = ?")
            arguments += [workflow]
        }
        if !filter.kinds.isEmpty {
            conditions.append("kind IN (\(db.dialect.texts(in: "?")))")
            arguments += [jsonArray(filter.kinds.map(\.rawValue).sorted())]
        }
        arguments += [limit]
        // A cached statement (one SQL text per filter): a follower reads after every commit,
        // and preparing the query each time cost more than running it.
        let statement = try db.statement(
            sql: """
                SELECT id, job_id, kind, queue, executor, batch, workflow_id, data, created_at FROM events
                WHERE \(conditions.joined(separator: " AND ")) ORDER BY id LIMIT ?
                """)
        defer { statement.reset() }
        statement.bind(arguments)
        var events: [JobEvent] = []
        while try statement.step() {
            events.append(
                JobEvent(
                    id: statement.int64(0), jobID: statement.optionalInt64(1),
                    kind: EventKind(rawValue: statement.string(2)) ?? .progress,
                    queue: statement.optionalString(3), executor: statement.optionalString(4),
                    batch: statement.optionalString(5),
                    workflowID: statement.optionalInt64(6), dataJSON: statement.optionalString(7),
                    createdAt: Date(timeIntervalSince1970: statement.double(8))))
        }
        return events
    }

    static func newestEventID(_ db: some SQLTransaction) throws -> Int64 {
        let statement = try db.statement(sql: "SELECT MAX(id) FROM events")
        defer { statement.reset() }
        return try statement.step() ? statement.optionalInt64(0) ?? 0 : 0
    }
}
