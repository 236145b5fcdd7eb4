import JobQCore

/// What a copy reads of both stores before it writes: which store the source is, the workers
/// live on either side, and whether the destination holds anything; and the mark of a copy
/// under way, which keeps workers off the store it fills.
enum CopyMarker {
    /// A store's identity: when its first schema migration ran (to the microsecond), which a
    /// copy of it does not share (the destination records its own). A destination records the
    /// identity of the source it is being filled from, so that a rerun of the same copy goes on
    /// and another source is refused.
    static func identity(_ db: some SQLTransaction) throws -> Double {
        try db.fetchOne(Double.self, sql: "SELECT MIN(applied_at) FROM jobq_schema_migrations") ?? 0
    }

    /// The workers with a heartbeat since `cutoff`: (id, host, pid).
    static func liveWorkers(_ db: some SQLTransaction, since cutoff: Double) throws -> [String] {
        try db.fetchRows(
            sql: "SELECT host, pid FROM jobq_workers WHERE heartbeat_at >= ? ORDER BY started_at", arguments: [cutoff]
        ).map { "\($0.string(0)) pid \($0.int64(1))" }
    }

    /// "2 workers (host pid 12, host pid 13) are", for a refusal.
    static func describe(_ workers: [String]) -> String {
        let shown = workers.prefix(5).joined(separator: ", ") + (workers.count > 5 ? ", ..." : "")
        return workers.count == 1 ? "a worker (\(shown)) is" : "\(workers.count) workers (\(shown)) are"
    }

    /// The first table that holds a row a copy would write (the copy's own marks aside), or
    /// nil when the store is empty.
    static func firstTableWithRows(_ db: some SQLTransaction) throws -> String? {
        for table in CopyPlan.tables.map({ ($0.name, $0.sqlName, $0.copiedRows) })
            + [("events", "jobq_events", nil), ("payload_indexes", "jobq_payload_indexes", nil)]
        {
            let condition = table.2.map { " WHERE \($0)" } ?? ""
            if try db.fetchOne(Int.self, sql: "SELECT 1 FROM \(table.1)\(condition) LIMIT 1") != nil { return table.0 }
        }
        return nil
    }

    /// The first row of `db`'s store whose priority is beyond a 32-bit integer (an earlier jobq
    /// let SQLite keep any), as "jobs row 7 (priority 3000000000)"; nil when there is none. Such
    /// a row cannot be written to PostgreSQL, nor enqueued any more.
    static func priorityOutOfRange(_ db: some SQLTransaction) throws -> String? {
        // PostgreSQL's integer columns never held more.
        guard db.dialect == .sqlite else { return nil }
        let range = JobOptions.priorityRange
        if let row = try db.fetchRow(
            sql: "SELECT id, priority FROM jobq_jobs WHERE priority < ? OR priority > ? LIMIT 1",
            arguments: [range.lowerBound, range.upperBound])
        {
            return "jobs row \(row.int64(0)) (priority \(row.int64(1)))"
        }
        for (table, sqlName) in [
            ("tree_nodes", "jobq_tree_nodes"), ("schedules", "jobq_schedules"), ("triggers", "jobq_triggers")
        ] {
            if let priority = try db.fetchOne(
                Int64.self, sql: "SELECT priority FROM \(sqlName) WHERE priority < ? OR priority > ? LIMIT 1",
                arguments: [range.lowerBound, range.upperBound])
            {
                return "a row of \(table) (priority \(priority))"
            }
        }
        return nil
    }

    /// Throws when `db`'s store is being filled by a copy that has not finished: a worker there
    /// would run jobs whose dependencies, workflow or batch are not copied yet.
    static func refuseWorkersWhileFilled(_ db: some SQLTransaction) throws {
        guard try CopyPlan.Setting.value(db, CopyPlan.Setting.source) != nil else { return }
        throw JobQueueError.invalidState(
            "this store is being filled by `jobq copy`, which has not finished: not all of its jobs are here yet. "
                + "Run the same copy again to finish it (it goes on from where it stopped), then start workers")
    }
}
