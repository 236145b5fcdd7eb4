import Foundation
import GRDB

/// The event outbox: written in the transaction of each state change, read by cursor.
extension SQLiteStore {
    /// Appends an event inside the caller's transaction.
    static func appendEvent(
        _ db: Database, job: JobID?, kind: EventKind, queue: String?, executor: String?, batch: String?,
        data: String?, now: Double
    ) throws {
        let insert = try RawStatement(
            db, sql: "INSERT INTO events (job_id, kind, queue, executor, batch, data, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)")
        insert.bind(1, job)
        insert.bind(2, kind.rawValue)
        insert.bind(3, queue)
        insert.bind(4, executor)
        insert.bind(5, batch)
        insert.bind(6, data)
        insert.bind(7, now)
        try insert.run()
    }

    /// Events with an id greater than `cursor`, oldest first, at most `limit`.
    func events(after cursor: Int64, filter: EventFilter, limit: Int) async throws -> [JobEvent] {
        try await read { db in try Self.events(db, after: cursor, filter: filter, limit: limit) }
    }

    /// The newest event id and the events after `cursor` up to it that match `filter` (at most
    /// `limit`): one read transaction, so the feed takes one hop per wake-up.
    func eventsUpToNewest(after cursor: Int64, filter: EventFilter, limit: Int) async throws -> (newest: Int64, events: [JobEvent]) {
        try await read { db in
            let newest = try Int64.fetchOne(db, sql: "SELECT MAX(id) FROM events") ?? 0
            guard newest > cursor else { return (newest, []) }
            return (newest, try Self.events(db, after: cursor, filter: filter, limit: limit).filter { $0.id <= newest })
        }
    }

    static func events(_ db: Database, after cursor: Int64, filter: EventFilter, limit: Int) throws -> [JobEvent] {
        var conditions = ["id > ?"]
        var arguments: StatementArguments = [cursor]
        if !filter.jobIDs.isEmpty {
            conditions.append("job_id IN (SELECT value FROM json_each(?))")
            arguments += [jsonArray(filter.jobIDs.sorted())]
        }
        if let executor = filter.executor { conditions.append("executor = ?"); arguments += [executor] }
        if let queue = filter.queue { conditions.append("queue = ?"); arguments += [queue] }
        if let batch = filter.batch { conditions.append("batch = ?"); arguments += [batch] }
        if !filter.kinds.isEmpty {
            conditions.append("kind IN (SELECT value FROM json_each(?))")
            arguments += [jsonArray(filter.kinds.map(\.rawValue).sorted())]
        }
        arguments += [limit]
        return try Row.fetchAll(
            db,
            sql: "SELECT * FROM events WHERE \(conditions.joined(separator: " AND ")) ORDER BY id LIMIT ?",
            arguments: arguments
        ).map { row in
            JobEvent(
                id: row["id"], jobID: row["job_id"], kind: EventKind(rawValue: row["kind"]) ?? .progress,
                queue: row["queue"], executor: row["executor"], batch: row["batch"], dataJSON: row["data"],
                createdAt: Date(timeIntervalSince1970: row["created_at"]))
        }
    }

    /// The newest event id: the cursor of "from now on".
    func latestEventID() async throws -> Int64 {
        try await read { db in try Int64.fetchOne(db, sql: "SELECT MAX(id) FROM events") ?? 0 }
    }
}
