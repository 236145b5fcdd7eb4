import Foundation
import JobQ
import Logging
import PostgresNIO

/// The event feed on PostgreSQL, with ids in commit order, so that a follower that resumes after
/// the last id it saw misses nothing and sees nothing twice.
///
/// A sequence alone does not give that: ids are handed out when rows are inserted, and
/// concurrent transactions commit in another order, so a follower that read id 11 could later
/// find id 10 appear behind its cursor. Every transaction that writes events therefore takes one
/// transaction-level advisory lock first, held until it ends: PostgreSQL releases it after the
/// commit is visible, so the next writer gets its ids only once the previous writer's events can
/// be read. Writers queue only for the tail of their transactions (the inserts and the commit);
/// the rest of their work runs side by side. A rolled-back writer leaves a hole in the ids (a
/// sequence never goes back), which a follower needs no more than it needs the events.
enum PostgresEventLog {
    /// "jobe" in ASCII: the advisory lock key of event writers.
    static let lockKey: Int64 = 0x6A6F_6265

    struct Row: Sendable {
        var job: JobID?
        var kind: EventKind
        var queue: String?
        var executor: String?
        var batch: String?
        var data: String?
        var workflow: WorkflowID?
    }

    /// Rows per INSERT: 500 x 8 parameters stay below PostgreSQL's 65,535.
    static let maximumRows = 500

    /// Appends `rows` inside the caller's transaction, after taking the writers' lock (again, if
    /// this transaction holds it already: it is reentrant). `ordered: false` skips the lock;
    /// only the test that shows why it is there uses it.
    static func append(
        _ rows: [Row], now: Double, on connection: PostgresConnection, logger: Logger, ordered: Bool = true
    ) async throws {
        guard !rows.isEmpty else { return }
        if ordered { try await connection.query("SELECT pg_advisory_xact_lock(\(lockKey))", logger: logger) }
        var start = 0
        while start < rows.count {
            let chunk = rows[start..<min(start + maximumRows, rows.count)]
            var bindings = PostgresBindings(capacity: chunk.count * 8)
            var values: [String] = []
            for row in chunk {
                let base = bindings.count
                values.append("($\(base + 1), $\(base + 2), $\(base + 3), $\(base + 4), $\(base + 5), $\(base + 6)::json, $\(base + 7), $\(base + 8))")
                bindings.append(row.job)
                bindings.append(row.kind.rawValue)
                bindings.append(row.queue)
                bindings.append(row.executor)
                bindings.append(row.batch)
                bindings.append(row.data)
                bindings.append(now)
                bindings.append(row.workflow)
            }
            let sql = "INSERT INTO events (job_id, kind, queue, executor, batch, data, created_at, workflow_id) VALUES "
                + values.joined(separator: ", ")
            try await connection.query(PostgresQuery(unsafeSQL: sql, binds: bindings), logger: logger)
            start += chunk.count
        }
    }

    /// Events with an id greater than `cursor` that match `filter`, oldest first, at most `limit`.
    static func events(
        after cursor: Int64, filter: EventFilter, limit: Int, on connection: PostgresConnection, logger: Logger
    ) async throws -> [JobEvent] {
        var bindings = PostgresBindings()
        var conditions: [String] = []
        func bind(_ condition: (String) -> String, _ value: some PostgresEncodable & Sendable) throws {
            try bindings.append(value)
            conditions.append(condition("$\(bindings.count)"))
        }
        try bind({ "id > \($0)" }, cursor)
        if !filter.jobIDs.isEmpty { try bind({ "job_id = ANY(\($0)::bigint[])" }, filter.jobIDs.sorted()) }
        if let executor = filter.executor { try bind({ "executor = \($0)" }, executor) }
        if let queue = filter.queue { try bind({ "queue = \($0)" }, queue) }
        if let batch = filter.batch { try bind({ "batch = \($0)" }, batch) }
        if let workflow = filter.workflow { try bind({ "workflow_id = \($0)" }, workflow) }
        if !filter.kinds.isEmpty { try bind({ "kind = ANY(\($0)::text[])" }, filter.kinds.map(\.rawValue).sorted()) }
        bindings.append(Int64(limit))
        let sql = """
            SELECT id, job_id, kind, queue, executor, batch, data::text, created_at, workflow_id FROM events
            WHERE \(conditions.joined(separator: " AND ")) ORDER BY id LIMIT $\(bindings.count)
            """
        var events: [JobEvent] = []
        let rows = try await connection.query(PostgresQuery(unsafeSQL: sql, binds: bindings), logger: logger)
        for try await (id, job, kind, queue, executor, batch, data, createdAt, workflow) in rows.decode(
            (Int64, Int64?, String, String?, String?, String?, String?, Double, Int64?).self)
        {
            events.append(
                JobEvent(
                    id: id, jobID: job, kind: EventKind(rawValue: kind) ?? .progress, queue: queue, executor: executor,
                    batch: batch, workflowID: workflow, dataJSON: data, createdAt: Date(timeIntervalSince1970: createdAt)))
        }
        return events
    }

    /// The newest event id: the cursor of "from now on".
    static func newestID(on connection: PostgresConnection, logger: Logger) async throws -> Int64 {
        try await connection.query("SELECT coalesce(max(id), 0)::bigint FROM events", logger: logger)
            .collect().first?.decode(Int64.self) ?? 0
    }
}
