import JobQCore

/// What `jobq copy` copies, table by table, and how (``StoreCopier``).
///
/// Rows keep their keys (job, workflow, group, tree and node ids), so every reference between
/// them holds on the destination as it did on the source. Two ways:
/// - a table keyed by an integer `id` is appended in pages after the destination's highest id,
///   each page one transaction: a copy killed midway goes on from where it stopped;
/// - any other table (settings, queues, batches, lanes, schedules, triggers, dependencies...) is
///   replaced whole in one transaction: a rerun writes it again, the same.
package enum CopyPlan {
    package enum Way: Sendable {
        case appendByID
        case replaceWhole
    }

    package struct Table: Sendable {
        package let name: String
        package let way: Way
        /// The rows of the table that are the copy's own bookkeeping, never copied nor replaced.
        package let ownRows: String?

        init(_ name: String, _ way: Way, ownRows: String? = nil) {
            self.name = name
            self.way = way
            self.ownRows = ownRows
        }

        /// `jobq_` and the name, as statements write it.
        package var sqlName: String { StoreTables.prefix + name }

        /// The condition of the rows copied (all but the copy's own), or nil for all.
        package var copiedRows: String? { ownRows.map { "NOT (\($0))" } }
    }

    /// In the order copied: what a row refers to is copied before it.
    package static let tables: [Table] = [
        Table("queues", .replaceWhole),
        Table("paused_executors", .replaceWhole),
        Table("store_settings", .replaceWhole, ownRows: settingsNotCopied),
        Table("data_migrations", .replaceWhole),
        Table("data_migration_steps", .replaceWhole),
        Table("batches", .replaceWhole),
        Table("tracking_sets", .replaceWhole),
        Table("tracking_members", .replaceWhole),
        Table("lanes", .replaceWhole),
        Table("schedules", .replaceWhole),
        Table("triggers", .replaceWhole),
        Table("trigger_emits", .replaceWhole),
        Table("workflows", .appendByID),
        Table("workflow_groups", .appendByID),
        Table("trees", .appendByID),
        Table("tree_nodes", .appendByID),
        Table("jobs", .appendByID),
        Table("steps", .replaceWhole),
        Table("signals", .appendByID),
        Table("dependencies", .replaceWhole),
        Table("queue_starts", .replaceWhole),
        Table("api_tokens", .replaceWhole)
    ]

    /// Tables copied otherwise, or not at all, and why.
    package static let notCopiedAsRows: [String: String] = [
        "events": "copied as the event feed, in its order (CopyFeed)",
        "payload_indexes": "each is an index on the jobs as well as a row: created anew on the destination",
        "schema_migrations": "each store records its own schema",
        "workers": "the source's processes, not the destination's",
        "leases": "held by the source's processes",
        "history": "the source's workers' statistics: the destination's charts start with the copy",
        "backlog_history": "the source's workers' statistics: the destination's charts start with the copy"
    ]

    /// Columns one store keeps for its event feed and the other has not: on SQLite a job's
    /// `enqueued` event in its row, on PostgreSQL an event's writing transaction. A copy writes
    /// the feed as event rows (``CopyFeed``).
    package static let feedColumns: Set<String> = ["enqueued_data", "xact"]

    /// Settings that are the copy's bookkeeping (named `copy...`), or that name event ids, which
    /// a copy may renumber (written after the events, ``StoreCopier``), or jobs' `enqueued`
    /// events in their rows, which a copy writes as event rows.
    static let settingsNotCopied =
        "name LIKE 'copy%' OR name IN ('events_deleted_through', 'enqueued_events_aged_through')"

    /// The copy's bookkeeping in the destination's settings.
    enum Setting {
        /// The source being copied (its identity, ``CopyMarker``): present from the copy's first
        /// write until its check passes.
        static let source = "copy_source"
        /// The feed position (on the source) of the last event copied.
        static let eventsMajor = "copy_events_major"
        static let eventsID = "copy_events_id"
        /// When the copy ended, and the newest event id it renumbered (absent when all kept).
        static let finishedAt = "copy_finished_at"
        static let renumberedThrough = "copy_renumbered_through"
    }
}

extension CopyPlan.Setting {
    /// The values of the settings named, by name (absent ones left out).
    static func values(_ db: some SQLTransaction, _ names: [String]) throws -> [String: Double] {
        let marks = Array(repeating: "?", count: names.count).joined(separator: ", ")
        var values: [String: Double] = [:]
        for row in try db.fetchRows(
            sql: "SELECT name, value FROM jobq_store_settings WHERE name IN (\(marks))",
            arguments: SQLArguments(names.map(SQLValue.text)))
        {
            values[row.string(0)] = row.double(1)
        }
        return values
    }

    static func value(_ db: some SQLTransaction, _ name: String) throws -> Double? {
        try values(db, [name])[name]
    }

    /// Sets each setting to its value, in the caller's transaction.
    static func set(_ db: some SQLTransaction, _ settings: [(name: String, value: Double)]) throws {
        guard !settings.isEmpty else { return }
        let tuples = Array(repeating: "(?, ?)", count: settings.count).joined(separator: ", ")
        try db.execute(
            sql: """
                INSERT INTO jobq_store_settings (name, value) VALUES \(tuples)
                ON CONFLICT (name) DO UPDATE SET value = excluded.value
                """,
            arguments: SQLArguments(settings.flatMap { [SQLValue.text($0.name), .real($0.value)] }))
    }
}
