import Foundation
import JobQCore

/// Retention: settings, the cleaner's batches, the lease that keeps cleaners one at a time, and
/// the mark that tells followers events were deleted.
extension SQLStore {
    /// Sets `queue`'s own retention of `states` (nil: back to the store's default); the other
    /// states keep their setting, NULL (the store's default, whatever it becomes) if never set.
    package func setRetention(_ retention: QueueRetention?, for queue: String, states: Set<JobState>) async throws {
        func stored(_ state: JobState) -> Double? {
            guard states.contains(state) else { return nil }
            return retention.map { StoreSQL.storedKeep($0.keeps(state)) }
        }
        func given(_ state: JobState) -> Int { states.contains(state) ? 1 : 0 }
        let arguments: SQLArguments = [
            queue, stored(.succeeded), stored(.dead), stored(.cancelled), given(.succeeded), given(.dead),
            given(.cancelled)
        ]
        try await write(.short, audience: .nobody) { db in
            try db.execute(
                sql: """
                    INSERT INTO jobq_queues (name, paused, keep_succeeded, keep_dead, keep_cancelled) VALUES (?, 0, ?, ?, ?)
                    ON CONFLICT (name) DO UPDATE SET
                        keep_succeeded = CASE WHEN ? <> 0 THEN excluded.keep_succeeded ELSE jobq_queues.keep_succeeded END,
                        keep_dead = CASE WHEN ? <> 0 THEN excluded.keep_dead ELSE jobq_queues.keep_dead END,
                        keep_cancelled = CASE WHEN ? <> 0 THEN excluded.keep_cancelled ELSE jobq_queues.keep_cancelled END
                    """,
                arguments: arguments)
        }
    }

    /// The store's retention and every queue's own (queues without one are absent).
    package func retentionSettings() async throws -> (store: StoreRetention, queues: [String: QueueRetention]) {
        try await read { db in
            let store = try StoreSQL.storeRetention(db)
            let queues = try StoreSQL.ownRetentions(db, default: store.jobs)
            return (store, queues)
        }
    }

    package func setDefaultRetention(_ retention: StoreRetention) async throws {
        try await write(.short, audience: .nobody) { db in
            for (name, value) in [
                ("keep_succeeded", retention.jobs.succeeded), ("keep_dead", retention.jobs.dead),
                ("keep_cancelled", retention.jobs.cancelled), ("keep_events", retention.events)
            ] {
                try StoreSQL.setSetting(db, name, StoreSQL.storedKeep(value))
            }
        }
    }

    /// Takes (or renews) the lease `name` for `holder` until `duration` from now, unless another
    /// holder's lease is still running. Returns whether `holder` holds it.
    package func acquireLease(_ name: String, holder: String, for duration: Duration) async throws -> Bool {
        try await write(.short, audience: .nobody) { db in
            let now = StoreSQL.now()
            try db.execute(
                sql: """
                    INSERT INTO jobq_leases (name, holder, until) VALUES (\(TakeLease.name), \(TakeLease.holder), \(TakeLease.until))
                    ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, until = excluded.until
                    WHERE jobq_leases.until < \(TakeLease.now) OR jobq_leases.holder = excluded.holder
                    """,
                arguments: TakeLease.arguments([
                    .name: name, .holder: holder, .until: now + duration.inSeconds, .now: now
                ]))
            return try db.fetchOne(String.self, sql: "SELECT holder FROM jobq_leases WHERE name = ?", arguments: [name])
                == holder
        }
    }

    /// Gives the lease back, if `holder` has it.
    package func releaseLease(_ name: String, holder: String) async throws {
        try await write(.short, audience: .nobody) { db in
            try db.execute(sql: "DELETE FROM jobq_leases WHERE name = ? AND holder = ?", arguments: [name, holder])
        }
    }

    /// The queues with finished jobs, and the retention each keeps them by: a read over the
    /// index of finished jobs, once per cleaner pass.
    package func retentionByQueue() async throws -> [(queue: String, retention: QueueRetention)] {
        try await read { db in
            let store = try StoreSQL.storeRetention(db)
            let own = try StoreSQL.ownRetentions(db, default: store.jobs)
            let queues = try db.fetchAll(
                String.self,
                sql:
                    "SELECT DISTINCT queue FROM jobq_jobs \(db.dialect.indexedBy("jobq_jobs_finished")) WHERE finished_at IS NOT NULL"
            )
            return queues.sorted().map { ($0, own[$0] ?? store.jobs) }
        }
    }

    /// Deletes up to `limit` of `queue`'s jobs that ended in `state` before `cutoff`, oldest
    /// first, with their events and dependency rows, in one small transaction; never one that
    /// something unfinished still refers to (``StoreSQL/unreferenced``). Returns how many.
    package func cleanFinished(queue: String, state: JobState, finishedBefore cutoff: Double, limit: Int)
        async throws -> Int
    {
        // Shared where writers overlap: claims, completions and enqueues run beside it. None of
        // them can make a finished job referred to (dependencies, lanes, batches, workflows and
        // tracking sets change in exclusive transactions, which wait for this one), and none
        // touches a finished job's row. With the exclusive lock, a busy queue's pick-ups waited
        // behind each batch (p99 +4.5 ms on PostgreSQL).
        try await write(.short, audience: .nobody, lock: .shared) { db in
            let ids = try db.fetchAll(
                JobID.self,
                sql: """
                    SELECT id FROM jobq_jobs \(db.dialect.indexedBy("jobq_jobs_finished"))
                    WHERE queue = \(ExpiredJobs.queue) AND state = \(ExpiredJobs.state) AND finished_at IS NOT NULL AND finished_at < \(ExpiredJobs.cutoff)
                        AND \(StoreSQL.unreferenced(now: "\(ExpiredJobs.now)"))
                    ORDER BY finished_at LIMIT \(ExpiredJobs.limit)
                    """,
                arguments: ExpiredJobs.arguments([
                    .queue: queue, .state: state.rawValue, .cutoff: cutoff, .now: StoreSQL.now(), .limit: limit
                ]))
            guard !ids.isEmpty else { return 0 }
            try StoreSQL.deleteJobs(db, ids)
            return ids.count
        }
    }

    /// How many of `queue`'s jobs that ended in `state` before `cutoff` are kept for references.
    package func keptForReferences(queue: String, state: JobState, finishedBefore cutoff: Double) async throws -> Int {
        try await read { db in
            try db.fetchOne(
                Int.self,
                sql: """
                    SELECT COUNT(*) FROM jobq_jobs \(db.dialect.indexedBy("jobq_jobs_finished"))
                    WHERE queue = \(CountExpiredJobs.queue) AND state = \(CountExpiredJobs.state) AND finished_at IS NOT NULL AND finished_at < \(CountExpiredJobs.cutoff)
                    """,
                arguments: CountExpiredJobs.arguments([.queue: queue, .state: state.rawValue, .cutoff: cutoff])) ?? 0
        }
    }

    /// Deletes up to `limit` of the oldest events, those made before `cutoff`, and records the
    /// newest id deleted. Returns how many.
    package func cleanEvents(before cutoff: Double, limit: Int) async throws -> Int {
        // Shared, like the jobs' batches: events are only ever appended, at higher ids.
        try await write(.short, audience: .nobody, lock: .shared) { db in
            // By id from the oldest, stopping at the first young one: ids follow time closely
            // enough, and the scan never walks the young rest of the feed.
            // Where job rows hold their `enqueued` events, those are part of the feed's oldest too:
            // the ones up to the last old event are hidden from then on (``StoreSQL/enqueuedEventsAgedThrough``).
            let inJobRows = db.dialect.keepsEnqueuedEventInJobRow
            let oldest = try db.fetchRows(
                sql: inJobRows
                    ? """
                    SELECT id, created_at, 0 FROM jobq_events
                    UNION ALL
                    SELECT id, created_at, 1 FROM jobq_jobs WHERE enqueued_data IS NOT NULL AND id > \(StoreSQL.enqueuedEventsAgedThrough)
                    ORDER BY id LIMIT ?
                    """ : "SELECT id, created_at, 0 FROM jobq_events ORDER BY id LIMIT ?",
                arguments: [limit])
            let old = oldest.prefix(while: { $0.double(1) < cutoff })
            guard let last = old.last?.int64(0) else { return 0 }
            let hidden = old.filter { $0.int64(2) == 1 }.count
            if inJobRows {
                try db.execute(
                    sql: """
                        INSERT INTO jobq_store_settings (name, value) VALUES ('enqueued_events_aged_through', ?)
                        ON CONFLICT (name) DO UPDATE SET value = excluded.value WHERE jobq_store_settings.value < excluded.value
                        """,
                    arguments: [last])
                if hidden > 0 { try StoreSQL.markEventsDeleted(db, through: last) }
            }
            return try StoreSQL.deleteEvents(db, where: "id <= ?", arguments: [last]) + hidden
        }
    }

    /// Deletes finished workflows (with their groups and trees) whose jobs are all gone.
    package func cleanFinishedWorkflows(finishedBefore cutoff: Double) async throws {
        try await write(.short, audience: .nobody) { db in
            try StoreSQL.deleteEmptyWorkflows(db, finishedBefore: cutoff)
        }
    }
}

extension StoreSQL {
    /// The stored form of a retention period: seconds, -1 for ever.
    static func storedKeep(_ period: Duration?) -> Double { period?.inSeconds ?? -1 }

    /// A period read back: nil (for ever) for a negative value.
    static func keep(_ stored: Double) -> Duration? { stored < 0 ? nil : Duration(storedSeconds: stored) }

    /// A queue's retention from three columns starting at `first`, each NULL one from `fallback`.
    static func queueRetention(_ row: SQLRow, from first: Int32, default fallback: QueueRetention) -> QueueRetention {
        var retention = fallback
        if let value = row.optionalDouble(first) { retention.succeeded = keep(value) }
        if let value = row.optionalDouble(first + 1) { retention.dead = keep(value) }
        if let value = row.optionalDouble(first + 2) { retention.cancelled = keep(value) }
        return retention
    }

    /// Every queue's own retention (queues without one are absent), NULL columns from `fallback`.
    static func ownRetentions(_ db: some SQLTransaction, default fallback: QueueRetention) throws
        -> [String: QueueRetention]
    {
        var queues: [String: QueueRetention] = [:]
        for row in try db.fetchRows(
            sql: """
                SELECT name, keep_succeeded, keep_dead, keep_cancelled FROM jobq_queues
                WHERE keep_succeeded IS NOT NULL OR keep_dead IS NOT NULL OR keep_cancelled IS NOT NULL
                """)
        {
            queues[row.string(0)] = queueRetention(row, from: 1, default: fallback)
        }
        return queues
    }

    static func storeRetention(_ db: some SQLTransaction) throws -> StoreRetention {
        var values: [String: Double] = [:]
        for row in try db.fetchRows(sql: "SELECT name, value FROM jobq_store_settings WHERE name LIKE 'keep_%'") {
            values[row.string(0)] = row.double(1)
        }
        var retention = StoreRetention.standard
        if let value = values["keep_succeeded"] { retention.jobs.succeeded = keep(value) }
        if let value = values["keep_dead"] { retention.jobs.dead = keep(value) }
        if let value = values["keep_cancelled"] { retention.jobs.cancelled = keep(value) }
        if let value = values["keep_events"] { retention.events = keep(value) }
        return retention
    }

    static func setSetting(_ db: some SQLTransaction, _ name: String, _ value: Double) throws {
        try db.execute(
            sql:
                "INSERT INTO jobq_store_settings (name, value) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value",
            arguments: [name, value])
    }

    /// The job row (as `jobs`) is referred to by nothing unfinished: no running workflow (or
    /// tree) it is a step of, no lane whose tail or halting job it is, no batch yet to fire,
    /// no tracking set whose latest member it is, no unfinished job waiting on it, and no
    /// unique key it still holds (?: the time now). Only such finished jobs may be deleted.
    static func unreferenced(now: String) -> String {
        """
        NOT (jobq_jobs.workflow_id IS NOT NULL
                AND EXISTS (SELECT 1 FROM jobq_workflows w WHERE w.id = jobq_jobs.workflow_id AND w.state = 'running'))
            AND NOT EXISTS (SELECT 1 FROM jobq_lanes l WHERE l.tail_job_id = jobq_jobs.id)
            AND NOT EXISTS (SELECT 1 FROM jobq_lanes l WHERE l.halted_job_id = jobq_jobs.id)
            AND NOT (jobq_jobs.batch IS NOT NULL
                AND EXISTS (SELECT 1 FROM jobq_batches b WHERE b.name = jobq_jobs.batch AND b.state <> 'fired'))
            AND NOT EXISTS (SELECT 1 FROM jobq_tracking_members m WHERE m.latest_job_id = jobq_jobs.id)
            AND NOT EXISTS (
                SELECT 1 FROM jobq_dependencies d JOIN jobq_jobs w ON w.id = d.job_id
                WHERE d.depends_on = jobq_jobs.id AND w.finished_at IS NULL)
            AND NOT (jobq_jobs.unique_hold IS NOT NULL AND \(finishedJobHoldsItsKey(now: now)))
        """
    }

    /// A finished job (as `jobs`) still holds its unique key: it ended in a state its rule
    /// keeps (`unique_states`: 1 succeeded, 2 dead, 4 cancelled) and its period has not passed
    /// (?: the time now). `UniqueKey.holds`, in SQL: a hold kept only until the same key is
    /// enqueued again (the default rule keeps none once finished) does not keep the job.
    static func finishedJobHoldsItsKey(now: String) -> String {
        """
        (CASE jobq_jobs.state WHEN 'succeeded' THEN 1 WHEN 'dead' THEN 2 WHEN 'cancelled' THEN 4 ELSE 0 END)
                    & COALESCE(jobq_jobs.unique_states, 0) <> 0
                AND (jobq_jobs.unique_for IS NULL OR jobq_jobs.finished_at + jobq_jobs.unique_for > \(now))
        """
    }

    /// Deletes jobs by id with their events and dependency rows, and records the newest event
    /// deleted: where a job's row holds its `enqueued` event (``SQLDialect/keepsEnqueuedEventInJobRow``),
    /// at the job's id, which goes with the row.
    static func deleteJobs(_ db: some SQLTransaction, _ ids: [JobID]) throws {
        let list = jsonArray(ids)
        let d = db.dialect
        _ = try deleteEvents(db, where: d.integer("job_id", in: "?"), arguments: [list])
        if d.keepsEnqueuedEventInJobRow,
            let newest = try db.fetchOne(
                Int64.self,
                sql: "SELECT MAX(id) FROM jobq_jobs WHERE \(d.integer("id", in: "?")) AND enqueued_data IS NOT NULL",
                arguments: [list])
        {
            try markEventsDeleted(db, through: newest)
        }
        try db.execute(sql: "DELETE FROM jobq_dependencies WHERE \(d.integer("job_id", in: "?"))", arguments: [list])
        try db.execute(
            sql: "DELETE FROM jobq_dependencies WHERE \(d.integer("depends_on", in: "?"))", arguments: [list])
        try db.execute(sql: "DELETE FROM jobq_steps WHERE \(d.integer("job_id", in: "?"))", arguments: [list])
        try db.execute(sql: "DELETE FROM jobq_signals WHERE \(d.integer("job_id", in: "?"))", arguments: [list])
        try db.execute(sql: "DELETE FROM jobq_jobs WHERE \(d.integer("id", in: "?"))", arguments: [list])
    }

    /// Finished workflows whose steps are all gone go too, with their groups and trees.
    static func deleteEmptyWorkflows(_ db: some SQLTransaction, finishedBefore cutoff: Double) throws {
        try db.execute(
            sql: """
                DELETE FROM jobq_workflows WHERE state != 'running' AND finished_at < ?
                    AND NOT EXISTS (SELECT 1 FROM jobq_workflow_groups g JOIN jobq_jobs j ON j.group_id = g.id WHERE g.workflow_id = jobq_workflows.id)
                """,
            arguments: [cutoff])
        try db.execute(sql: "DELETE FROM jobq_workflow_groups WHERE workflow_id NOT IN (SELECT id FROM jobq_workflows)")
        try db.execute(
            sql:
                "DELETE FROM jobq_tree_nodes WHERE tree_id IN (SELECT id FROM jobq_trees WHERE workflow_id NOT IN (SELECT id FROM jobq_workflows))"
        )
        try db.execute(sql: "DELETE FROM jobq_trees WHERE workflow_id NOT IN (SELECT id FROM jobq_workflows)")
    }

    /// Deletes the events `condition` selects and records the newest of them, so that followers
    /// behind it are told (``checkCursorKept(_:after:)``). Returns how many were deleted.
    static func deleteEvents(_ db: some SQLTransaction, where condition: String, arguments: SQLArguments) throws
        -> Int
    {
        guard
            let newest = try db.fetchOne(
                Int64.self, sql: "SELECT MAX(id) FROM jobq_events WHERE \(condition)", arguments: arguments)
        else { return 0 }
        try db.execute(sql: "DELETE FROM jobq_events WHERE \(condition)", arguments: arguments)
        let deleted = db.changesCount
        try markEventsDeleted(db, through: newest)
        return deleted
    }

    /// Records that events up to `id` may have been deleted: followers behind it are told.
    static func markEventsDeleted(_ db: some SQLTransaction, through id: Int64) throws {
        try db.execute(
            sql: """
                INSERT INTO jobq_store_settings (name, value) VALUES ('events_deleted_through', ?)
                ON CONFLICT (name) DO UPDATE SET value = excluded.value WHERE jobq_store_settings.value < excluded.value
                """,
            arguments: [Double(id)])
    }

    /// Throws ``JobQueueError/eventsDeleted(_:)`` when events after `cursor` were deleted: a
    /// follower resuming there would skip them. A cursor of 0 (from the oldest kept) is never
    /// refused.
    static func checkCursorKept(_ db: some SQLTransaction, after cursor: Int64) throws {
        guard cursor > 0,
            let through = try db.fetchOne(
                Double.self, sql: "SELECT value FROM jobq_store_settings WHERE name = 'events_deleted_through'"),
            Int64(through) > cursor
        else { return }
        // Deletions leave holes, not a clean prefix (a queue kept forever beside one kept an
        // hour), so the only cursor past every hole is the newest id deleted; reading from the
        // start (cursor 0) is never refused.
        throw JobQueueError.eventsDeleted(
            "events after \(cursor) were deleted (retention or `jobq prune`, up to id \(Int64(through))): resuming from "
                + "\(cursor) would skip them. Resume after the deleted ones (--since \(Int64(through))), or read every "
                + "event still kept from the start (without --since) knowing some are gone; keep events longer with "
                + "`jobq retention --events`")
    }
}

/// A lease taken or renewed by its holder.
private enum TakeLease: Int32, SQLParameter, CaseIterable {
    case name = 1
    case holder, until, now
}

/// A page of jobs retention deletes.
private enum ExpiredJobs: Int32, SQLParameter, CaseIterable {
    case queue = 1
    case state, cutoff, now, limit
}

/// How many jobs retention would delete.
private enum CountExpiredJobs: Int32, SQLParameter, CaseIterable {
    case queue = 1
    case state, cutoff
}
