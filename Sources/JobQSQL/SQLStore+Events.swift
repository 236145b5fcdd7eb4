import Foundation
import JobQCore

/// The event outbox: written in the transaction of each state change, read by cursor.
extension SQLStore {
    /// Events after `cursor` in the feed's order, at most `limit`, in one read: the feed of a
    /// store whose writes never overlap (SQLite), where ids follow commit order.
    package func eventsInOneRead(after cursor: Int64, filter: EventFilter, limit: Int) async throws -> [JobEvent] {
        try await read { db in
            try StoreSQL.checkCursorKept(db, after: cursor)
            return try StoreSQL.events(db, after: cursor, filter: filter, limit: limit)
        }
    }

    /// Events after `cursor` in the feed's order, at most `limit`, where writes overlap (a
    /// server): the feed holds back events of transactions younger than one still running
    /// (``StoreSQL/EventPosition``). A page read waits, for 2 seconds at most, until every
    /// transaction that was running when it was called has ended, so that it holds the events
    /// of every commit its caller saw before calling.
    package func eventsBehindRunningWrites(after cursor: Int64, filter: EventFilter, limit: Int) async throws
        -> [JobEvent]
    {
        let deadline = ContinuousClock.now + .seconds(2)
        var target: Int64?
        while true {
            let (events, horizon, end) = try await read(.short) { db in
                try StoreSQL.checkCursorKept(db, after: cursor)
                let position = try StoreSQL.EventPosition(db, after: cursor)
                let page = try StoreSQL.events(db, after: position, filter: filter, limit: limit)
                return (page, position.horizon, position.snapshotEnd)
            }
            let wanted = target ?? end
            target = wanted
            if horizon >= wanted || ContinuousClock.now >= deadline { return events }
            try await Task.sleep(for: .milliseconds(2))
        }
    }

    /// The events after `cursor` that match `filter` (at most `limit`), and the cursor to go on
    /// from when they are fewer than `limit` (the newest event, matching or not): one read
    /// transaction, so the feed takes one hop per wake-up.
    package func eventsUpToNewest(after cursor: Int64, filter: EventFilter, limit: Int) async throws -> (
        newest: Int64, events: [JobEvent]
    ) {
        try await read(.short) { db in
            try StoreSQL.checkCursorKept(db, after: cursor)
            let position = try StoreSQL.EventPosition(db, after: cursor)
            let newest = try position.newestEventID(db)
            if position.isAtEnd(newest: newest) { return (position.next(newest: newest), []) }
            // One snapshot: every event read is at most the newest one in the feed's order.
            let events = try StoreSQL.events(db, after: position, filter: filter, limit: limit)
            return (position.next(newest: newest), events)
        }
    }

    /// The newest event id: the cursor of "from now on".
    package func latestEventID() async throws -> Int64 {
        try await read(.short) { db in try StoreSQL.EventPosition(db, after: 0).newestEventID(db) }
    }
}

extension StoreSQL {
    /// Where the feed stands after an event id, in the feed's order.
    ///
    /// On SQLite, writes run one at a time and ids follow commit order: the feed is id order.
    /// On a server, shared writes run side by side and take ids in any order, so the feed is
    /// ordered by the writing transaction's id, then the event id, and holds only events of
    /// transactions older than the oldest one still running (`xact < horizon`): a transaction
    /// that commits later cannot add an event before one already read. A write transaction that
    /// runs long on the server (any write, jobq's or not) holds the feed back until it ends.
    struct EventPosition {
        let conditions: [String]
        let arguments: SQLArguments
        /// On a server, events of transactions below this are all final (``eventHorizon``), and
        /// every transaction below `snapshotEnd` had begun when the read's snapshot was taken;
        /// both read once per position.
        let horizon: Int64
        let snapshotEnd: Int64
        /// On a server: the event was found (or the cursor is 0), so positions after it are in
        /// transaction order; otherwise ids are compared (an event pruned since, or a cursor
        /// from elsewhere).
        private let located: Bool
        private let cursor: Int64
        /// Ids follow commit order (SQLite).
        private let commitOrdered: Bool

        init(_ db: some SQLTransaction, after cursor: Int64) throws {
            self.cursor = cursor
            commitOrdered = db.dialect == .sqlite
            switch db.dialect {
            case .sqlite:
                conditions = ["id > ?"]
                arguments = [cursor]
                located = true
                horizon = .max
                snapshotEnd = .max
            case .postgres:
                // The cursor's transaction, the horizon and the snapshot's end in one statement.
                let row = try db.fetchRow(sql: StoreSQL.positionSQL, arguments: [cursor])
                horizon = row.map { $0["horizon"] as Int64 } ?? 0
                snapshotEnd = row.map { $0["snapshot_end"] as Int64 } ?? 0
                let xact: Int64? = cursor == 0 ? 0 : row.flatMap { $0["xact"] as Int64? }
                if let xact {
                    conditions = ["(xact, id) > (?, ?)", "xact < ?"]
                    arguments = [xact, cursor, horizon]
                    located = true
                } else {
                    conditions = ["id > ?", "xact < ?"]
                    arguments = [cursor, horizon]
                    located = false
                }
            }
        }

        /// The last event in the feed's order, 0 when there is none.
        func newestEventID(_ db: some SQLTransaction) throws -> Int64 {
            let statement = try db.statement(sql: StoreSQL.newestEventSQL[db.dialect])
            defer { statement.reset() }
            if db.dialect == .postgres { statement.bind(1, horizon) }
            return try statement.step() ? statement.optionalInt64(0) ?? 0 : 0
        }

        /// Whether `newest` (the feed's last event) is no later than the cursor.
        func isAtEnd(newest: Int64) -> Bool {
            commitOrdered ? newest <= cursor : located && newest == cursor
        }

        /// The cursor after all events up to `newest` (the feed's last event, or 0 when empty).
        func next(newest: Int64) -> Int64 {
            !commitOrdered && located && newest != 0 ? newest : max(cursor, newest)
        }

        static func order(_ dialect: SQLDialect) -> String {
            switch dialect {
            case .sqlite: "id"
            case .postgres: "xact, id"
            }
        }
    }

    static func events(_ db: some SQLTransaction, after cursor: Int64, filter: EventFilter, limit: Int) throws
        -> [JobEvent]
    {
        try events(db, after: EventPosition(db, after: cursor), filter: filter, limit: limit)
    }

    static func events(_ db: some SQLTransaction, after position: EventPosition, filter: EventFilter, limit: Int)
        throws -> [JobEvent]
    {
        // Event rows, and on SQLite the `enqueued` events kept in job rows
        // (``SQLDialect/keepsEnqueuedEventInJobRow``), merged in id order: each part is read in
        // its primary key's order, so the merge never sorts.
        var rows = FeedPart(conditions: position.conditions, arguments: position.arguments, jobColumn: "job_id")
        var jobRows: FeedPart? =
            db.dialect.keepsEnqueuedEventInJobRow && (filter.kinds.isEmpty || filter.kinds.contains(.enqueued))
            ? FeedPart(
                conditions: position.conditions + ["enqueued_data IS NOT NULL", "id > \(enqueuedEventsAgedThrough)"],
                arguments: position.arguments,
                jobColumn: "id")
            : nil
        func require(_ condition: (_ jobColumn: String) -> String, _ value: some SQLBindable) {
            rows.require(condition, value)
            jobRows?.require(condition, value)
        }
        if !filter.jobIDs.isEmpty {
            require({ db.dialect.integer($0, in: "?") }, jsonArray(filter.jobIDs.sorted()))
        }
        if let executor = filter.executor { require({ _ in "executor = ?" }, executor) }
        if let queue = filter.queue { require({ _ in "queue = ?" }, queue) }
        if let batch = filter.batch { require({ _ in "batch = ?" }, batch) }
        if let workflow = filter.workflow { require({ _ in "workflow_id = ?" }, workflow) }
        if !filter.kinds.isEmpty {
            rows.require(
                { _ in "kind IN (\(db.dialect.texts(in: "?")))" }, jsonArray(filter.kinds.map(\.rawValue).sorted()))
        }
        var sql = """
            SELECT id, job_id, kind, queue, executor, batch, workflow_id, data, created_at FROM jobq_events
            WHERE \(rows.conditions.joined(separator: " AND "))
            """
        var arguments = rows.arguments
        if let jobRows {
            sql += """

                UNION ALL
                SELECT id, id, 'enqueued', queue, executor, batch, workflow_id, enqueued_data, created_at FROM jobq_jobs
                WHERE \(jobRows.conditions.joined(separator: " AND "))
                """
            arguments += jobRows.arguments
        }
        sql += " ORDER BY \(EventPosition.order(db.dialect)) LIMIT ?"
        arguments += [limit]
        // A cached statement (one SQL text per filter): a follower reads after every commit,
        // and preparing the query each time cost more than running it.
        let statement = try db.statement(sql: sql)
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

}

extension StoreSQL {
    /// On PostgreSQL, the oldest transaction of this database that the read's snapshot sees
    /// running (or the snapshot's end when there is none): events of older transactions are all
    /// committed or gone. Transaction ids are the server's, shared by all its databases, so the
    /// running ones that `pg_stat_activity` shows in another database are left out (their ids
    /// compared in their 32-bit form): a long transaction of another application on the same
    /// server does not hold the feed back. One that cannot be placed (ended since the snapshot,
    /// or of a role whose sessions this one may not see) counts as this database's.
    static let eventHorizon = """
        COALESCE(
            (SELECT MIN(CAST(CAST(running AS text) AS bigint)) FROM pg_snapshot_xip(pg_current_snapshot()) AS running
             WHERE CAST(CAST(running AS text) AS bigint) % 4294967296 NOT IN (
                SELECT CAST(CAST(backend_xid AS text) AS bigint) FROM pg_stat_activity
                WHERE backend_xid IS NOT NULL AND datname IS DISTINCT FROM current_database())),
            CAST(CAST(pg_snapshot_xmax(pg_current_snapshot()) AS text) AS bigint))
        """

    /// On PostgreSQL: the transaction of the event bound (NULL when there is none), the feed's
    /// horizon, and the end of the snapshot (every transaction below it had begun when the
    /// snapshot was taken).
    static let positionSQL = """
        SELECT (SELECT xact FROM jobq_events WHERE id = ?) AS xact, \(eventHorizon) AS horizon,
            CAST(CAST(pg_snapshot_xmax(pg_current_snapshot()) AS text) AS bigint) AS snapshot_end
        """

    /// The newest id up to which the event cleaner deleted the feed by age, `enqueued` events
    /// kept in job rows included: those of jobs still there are no longer read.
    static let enqueuedEventsAgedThrough =
        "coalesce((SELECT value FROM jobq_store_settings WHERE name = 'enqueued_events_aged_through'), 0)"

    /// One part of the feed's read: a table's conditions and their arguments.
    private struct FeedPart {
        var conditions: [String]
        var arguments: SQLArguments
        /// The column holding the event's job id.
        let jobColumn: String

        mutating func require(_ condition: (_ jobColumn: String) -> String, _ value: some SQLBindable) {
            conditions.append(condition(jobColumn))
            arguments.append(value)
        }
    }

    static let newestEventSQL = DialectSQL { d in
        switch d {
        // The newest event row or job (whose id is its `enqueued` event's,
        // ``SQLDialect/keepsEnqueuedEventInJobRow``), or the newest event deleted, if later: a
        // cursor there is past every event there is, and past every one deleted.
        case .sqlite:
            """
            SELECT MAX(coalesce((SELECT MAX(id) FROM jobq_events), 0), coalesce((SELECT MAX(id) FROM jobq_jobs), 0),
                CAST(coalesce((SELECT value FROM jobq_store_settings WHERE name = 'events_deleted_through'), 0) AS INTEGER))
            """
        case .postgres:
            """
            SELECT id FROM jobq_events WHERE xact < ? ORDER BY xact DESC, id DESC LIMIT 1
            """
        }
    }
}
