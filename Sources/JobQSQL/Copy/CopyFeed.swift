import JobQCore

/// The event feed as a copy reads and writes it: every event in the feed's order, `enqueued`
/// events kept in SQLite's job rows included, written to the destination as event rows.
///
/// Ids: each event keeps its id unless the destination's order needs another. A destination's
/// feed runs in id order (copied events come before every later write: on PostgreSQL their
/// transaction is set to 1, older than any), so an event takes the higher of its own id and
/// one past the previous event's new id. A SQLite feed is in id order already: every id is
/// kept. A PostgreSQL feed runs in commit order, which ids follow only mostly: the events
/// after an out-of-order one are renumbered.
enum CopyFeed {
    /// One event: its id and place on the source (`major`: its transaction on PostgreSQL, 0 on
    /// SQLite), and ``columns``' values.
    struct Event: Sendable {
        let id: Int64
        let major: Int64
        let values: [SQLValue]
    }

    /// A place in a source's feed: after the event at (`major`, `id`).
    struct Position: Equatable, Sendable {
        var major: Int64
        var id: Int64
        static let start = Position(major: 0, id: 0)
    }

    /// An event's columns besides its id, in the order ``Event/values`` holds them.
    static let columns = ["job_id", "kind", "queue", "executor", "batch", "workflow_id", "data", "created_at"]

    /// The events after a position (?1, ?2), in the feed's order, at most ?3.
    private static let pageSQL = DialectSQL { dialect in
        switch dialect {
        case .sqlite:
            """
            SELECT id, 0 AS major, job_id, kind, queue, executor, batch, workflow_id, data, created_at
            FROM jobq_events WHERE id > ?2
            UNION ALL
            SELECT id, 0, id, 'enqueued', queue, executor, batch, workflow_id, enqueued_data, created_at
            FROM jobq_jobs WHERE enqueued_data IS NOT NULL AND id > ?2 AND id > \(StoreSQL.enqueuedEventsAgedThrough)
            ORDER BY id LIMIT ?3
            """
        case .postgres:
            """
            SELECT id, xact AS major, job_id, kind, queue, executor, batch, workflow_id, data, created_at
            FROM jobq_events WHERE (xact, id) > (?1, ?2) ORDER BY xact, id LIMIT ?3
            """
        }
    }

    private static let countSQL = DialectSQL { dialect in
        switch dialect {
        case .sqlite:
            """
            SELECT (SELECT COUNT(*) FROM jobq_events) + (SELECT COUNT(*) FROM jobq_jobs
                WHERE enqueued_data IS NOT NULL AND id > \(StoreSQL.enqueuedEventsAgedThrough))
            """
        case .postgres: "SELECT COUNT(*) FROM jobq_events"
        }
    }

    static func page(_ db: some SQLTransaction, after position: Position, limit: Int) throws -> [Event] {
        try db.fetchRows(sql: pageSQL[db.dialect], arguments: [position.major, position.id, limit]).map { row in
            Event(id: row.int64(0), major: row.int64(1), values: Array(row.values.dropFirst(2)))
        }
    }

    static func count(_ db: some SQLTransaction) throws -> Int {
        try db.fetchOne(Int.self, sql: countSQL[db.dialect]) ?? 0
    }

    /// Writes `events` with their new ids, and where the copy stands on the source (after
    /// `last`), in the caller's transaction.
    static func write(_ db: some SQLTransaction, _ events: [(id: Int64, event: Event)], last: Position) throws {
        let postgres = db.dialect == .postgres
        let rows = events.map { id, event in
            [SQLValue.integer(id)] + event.values + (postgres ? [.integer(1)] : [])
        }
        try CopyRows.insert(
            db, into: "jobq_events", columns: ["id"] + columns + (postgres ? ["xact"] : []), rows: rows,
            keepingIDs: true)
        try CopyPlan.Setting.set(
            db, [(CopyPlan.Setting.eventsMajor, Double(last.major)), (CopyPlan.Setting.eventsID, Double(last.id))])
    }

    /// Where an earlier run of the copy stopped: the source position of the last event it
    /// wrote, and that event's id on the destination; the start when it wrote none.
    static func resumePoint(_ db: some SQLTransaction) throws -> (position: Position, lastID: Int64) {
        let settings = try CopyPlan.Setting.values(db, [CopyPlan.Setting.eventsMajor, CopyPlan.Setting.eventsID])
        let lastID = try db.fetchOne(Int64.self, sql: "SELECT MAX(id) FROM jobq_events") ?? 0
        guard let major = settings[CopyPlan.Setting.eventsMajor].map(Int64.init),
            let id = settings[CopyPlan.Setting.eventsID].map(Int64.init)
        else {
            return (.start, lastID)
        }
        return (Position(major: major, id: id), lastID)
    }
}
