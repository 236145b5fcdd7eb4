import Foundation
import JobQCore

extension SQLStore {
    /// Copies this store into `destination`, another SQL store (``StoreCopier``).
    package func copyEverything(
        to destination: any Store, options: StoreCopyOptions,
        progress: @escaping @Sendable (StoreCopyProgress) -> Void
    ) async throws -> StoreCopyReport {
        guard let destination = destination as? any SQLStore else {
            throw JobQueueError.invalidInput("a store can be copied only into a SQLite file or a PostgreSQL database")
        }
        guard destination !== self else {
            throw JobQueueError.invalidInput("the source and the destination are the same store: name another one")
        }
        return try await copy(into: destination, options: options, progress: progress)
    }

    package func copyRecord() async throws -> StoreCopyRecord? {
        let settings = try await read(.short) { db in
            try CopyPlan.Setting.values(db, [CopyPlan.Setting.finishedAt, CopyPlan.Setting.renumberedThrough])
        }
        guard let finished = settings[CopyPlan.Setting.finishedAt] else { return nil }
        return StoreCopyRecord(
            finishedAt: Date(timeIntervalSince1970: finished),
            renumberedThrough: settings[CopyPlan.Setting.renumberedThrough].map { Int64($0) })
    }

    private func copy<Destination: SQLStore>(
        into destination: Destination, options: StoreCopyOptions,
        progress: @escaping @Sendable (StoreCopyProgress) -> Void
    ) async throws -> StoreCopyReport {
        try await StoreCopier(source: self, destination: destination, options: options, progress: progress).run()
    }
}

/// Copies a whole store into another, SQLite or PostgreSQL either way (``CopyPlan``): tables
/// with their keys, the event feed in its order (``CopyFeed``), payload indexes; then counts
/// and checksums both sides, table by table.
///
/// Crash-safe and resumable: the destination records which source it is being filled from
/// (`copy_source` in its settings) in the first write; every page is a transaction of its own,
/// and a rerun with the same source goes on after the last page written (a table replaced whole
/// is written again). The mark goes once the check passes, so a destination whose copy did not
/// finish is never taken for an empty store nor for a finished copy.
struct StoreCopier<Source: SQLStore, Destination: SQLStore>: Sendable {
    let source: Source
    let destination: Destination
    let options: StoreCopyOptions
    let progress: @Sendable (StoreCopyProgress) -> Void

    /// Workers whose heartbeat is this recent are live (they beat every few seconds).
    static var liveWithin: Double { 30 }

    func run() async throws -> StoreCopyReport {
        let resumed = try await begin()
        var columnsByTable: [String: [String]] = [:]
        for table in CopyPlan.tables {
            let columns = try await copiedColumns(table.name)
            columnsByTable[table.name] = columns
            switch table.way {
            case .appendByID: try await append(table, columns: columns)
            case .replaceWhole: try await replace(table, columns: columns)
            }
        }
        try await copyFeed()
        let indexes = try await source.payloadIndexes().map(\.pointer)
        for pointer in indexes { _ = try await destination.addPayloadIndex(pointer) }
        let check = try await CopyCheck(source: source, destination: destination).run(
            columns: columnsByTable, payloadIndexes: indexes)
        try await finish(mapping: check.mapping, verified: check.tables.allSatisfy(\.matches))
        return StoreCopyReport(
            tables: check.tables, resumed: resumed, eventIDs: check.mapping, payloadIndexes: indexes)
    }

    // MARK: Beginning

    /// Refuses what must not be copied from or into, and marks the destination as being filled
    /// from this source. Returns whether an earlier run of the same copy had begun.
    private func begin() async throws -> Bool {
        let now = StoreSQL.now()
        let (identity, sourceWorkers, outOfRange) = try await source.read { db in
            (
                try CopyMarker.identity(db), try CopyMarker.liveWorkers(db, since: now - Self.liveWithin),
                try CopyMarker.priorityOutOfRange(db)
            )
        }
        if let outOfRange {
            throw JobQueueError.invalidInput(
                "the source holds a priority beyond \(JobOptions.priorityRange.lowerBound)...\(JobOptions.priorityRange.upperBound) "
                    + "(\(outOfRange)), which no store takes any more: set it within the range on the source (or "
                    + "cancel and delete that job), then copy again. Nothing was written to the destination")
        }
        if !sourceWorkers.isEmpty && !options.allowLiveWorkers {
            throw JobQueueError.invalidState(
                "\(CopyMarker.describe(sourceWorkers)) live on the source (a heartbeat in the last \(Int(Self.liveWithin))s): "
                    + "jobs they finish during the copy would run again on the destination. Stop them (SIGTERM) and "
                    + "copy again, or copy anyway (`--allow-live-workers`, `StoreCopyOptions(allowLiveWorkers: true)`)")
        }
        return try await destination.write(.long, audience: .nobody) { db in
            let workers = try CopyMarker.liveWorkers(db, since: now - Self.liveWithin)
            if !workers.isEmpty {
                throw JobQueueError.invalidState(
                    "\(CopyMarker.describe(workers)) live on the destination: they would run jobs half copied. "
                        + "Stop them and copy again; start workers on the destination once the copy has ended")
            }
            let marked = try CopyPlan.Setting.value(db, CopyPlan.Setting.source)
            if let marked {
                guard marked == identity else {
                    throw JobQueueError.invalidState(
                        "the destination holds an unfinished copy of another store: finish that copy (run it "
                            + "again with its own source), or empty the destination and copy again")
                }
                try CopyGuard.install(db)
                return true
            }
            if let finished = try CopyPlan.Setting.value(db, CopyPlan.Setting.finishedAt) {
                let when = Date(timeIntervalSince1970: finished).formatted(.iso8601)
                throw JobQueueError.invalidState(
                    "the destination is a finished copy (made \(when)), and may have run jobs since: a copy goes "
                        + "into a new store. Name an empty one")
            }
            if let table = try CopyMarker.firstTableWithRows(db) {
                throw JobQueueError.invalidState(
                    "the destination is not empty (its \(table) table has rows): a copy goes into a new store. "
                        + "Name an empty one (a new file, or a new database or schema)")
            }
            try CopyPlan.Setting.set(db, [(CopyPlan.Setting.source, identity)])
            try CopyGuard.install(db)
            return false
        }
    }

    /// The columns copied of `table`: both stores' columns but those of their event feeds.
    /// Both stores are at jobq's current schema, so they have the same; if not, one is newer.
    private func copiedColumns(_ table: String) async throws -> [String] {
        let from = try await source.read { db in try source.columns(ofTable: table, db) }
        let into = try await destination.read { db in try destination.columns(ofTable: table, db) }
        let copied = from.filter { !CopyPlan.feedColumns.contains($0) }
        let missing =
            copied.filter { !into.contains($0) }
            + into.filter { !from.contains($0) && !CopyPlan.feedColumns.contains($0) }
        guard missing.isEmpty, !copied.isEmpty else {
            throw JobQueueError.incompatibleStore(
                "the \(table) tables differ (columns \(missing.joined(separator: ", ")) are on one side only): the two "
                    + "stores are at different schema versions. Run the same jobq's `jobq migrate up` on both")
        }
        return copied
    }

    // MARK: Tables

    /// Appends the rows past the destination's highest id, a page per transaction.
    private func append(_ table: CopyPlan.Table, columns: [String]) async throws {
        let sqlName = table.sqlName
        let total = try await source.read { db in try db.fetchOne(Int.self, sql: "SELECT COUNT(*) FROM \(sqlName)") ?? 0
        }
        var (after, copied) = try await destination.read { db in
            (
                try db.fetchOne(Int64.self, sql: "SELECT MAX(id) FROM \(sqlName)") ?? 0,
                try db.fetchOne(Int.self, sql: "SELECT COUNT(*) FROM \(sqlName)") ?? 0
            )
        }
        progress(StoreCopyProgress(table: table.name, copied: copied, total: total))
        var pageSize = CopyPageSize(most: options.rowsPerTransaction)
        while true {
            let (from, limit) = (after, pageSize.current)
            let rows = try await source.read { db in
                try CopyRows.page(db, of: sqlName, columns: columns, after: from, limit: limit)
            }
            guard let last = rows.last else { break }
            try await destination.write(.long, audience: .nobody) { db in
                try CopyGuard.writing(db) {
                    try CopyRows.insert(db, into: sqlName, columns: columns, rows: rows, keepingIDs: true)
                }
            }
            after = CopyRows.id(of: last, columns: columns) ?? after
            copied += rows.count
            progress(StoreCopyProgress(table: table.name, copied: copied, total: total))
            if rows.count < limit { break }
            pageSize.read(rows: rows.count, bytes: rows.reduce(0) { $0 + CopyRows.size(of: $1) })
        }
    }

    /// Replaces the destination's rows with the source's, in one transaction.
    private func replace(_ table: CopyPlan.Table, columns: [String]) async throws {
        let rows = try await source.read { db in try CopyRows.all(db, of: table, columns: columns) }
        let (sqlName, condition) = (table.sqlName, table.copiedRows.map { " WHERE \($0)" } ?? "")
        try await destination.write(.long, audience: .nobody) { db in
            try db.execute(sql: "DELETE FROM \(sqlName)\(condition)")
            try CopyRows.insert(db, into: sqlName, columns: columns, rows: rows, keepingIDs: false)
        }
        progress(StoreCopyProgress(table: table.name, copied: rows.count, total: rows.count))
    }

    // MARK: Events

    /// Appends the source's feed after the last event an earlier run wrote, a page per
    /// transaction, numbering the events as ``CopyFeed`` says.
    private func copyFeed() async throws {
        let total = try await source.read { db in try CopyFeed.count(db) }
        var (position, lastID) = try await destination.read { db in try CopyFeed.resumePoint(db) }
        var copied = try await destination.read { db in
            try db.fetchOne(Int.self, sql: "SELECT COUNT(*) FROM jobq_events") ?? 0
        }
        progress(StoreCopyProgress(table: "events", copied: copied, total: total))
        var pageSize = CopyPageSize(most: options.rowsPerTransaction)
        while true {
            let (from, limit) = (position, pageSize.current)
            let events = try await source.read { db in try CopyFeed.page(db, after: from, limit: limit) }
            guard let last = events.last else { break }
            let numbered = events.map { event in
                lastID = max(lastID + 1, event.id)
                return (id: lastID, event: event)
            }
            position = CopyFeed.Position(major: last.major, id: last.id)
            let through = position
            try await destination.write(.long, audience: .nobody) { db in
                try CopyFeed.write(db, numbered, last: through)
            }
            copied += events.count
            progress(StoreCopyProgress(table: "events", copied: copied, total: total))
            if events.count < limit { break }
            pageSize.read(rows: events.count, bytes: events.reduce(0) { $0 + CopyRows.size(of: $1.values) })
        }
    }

    // MARK: End

    /// Once the check passes: new ids start past the copied ones, the feed's record of deleted
    /// events carries over (as a destination id), and the mark of a copy under way becomes the
    /// record of one done. When it fails, the mark stays: the destination is not taken for a
    /// store to run.
    private func finish(mapping: EventIDMapping, verified: Bool) async throws {
        let deletedThrough = try await source.read { db in try CopyPlan.Setting.value(db, "events_deleted_through") }
        let now = StoreSQL.now()
        try await destination.write(.long, audience: .workersAndFollowers) { db in
            try destination.advanceIDsAfterCopy(db)
            guard verified else { return }
            try CopyGuard.remove(db)
            if let deletedThrough {
                // Events up to it on the source are at most the newest destination id of one
                // renumbered among them (new ids are never lower, and grow in feed order).
                let through =
                    mapping.renumbered.last(where: { $0.source <= Int64(deletedThrough) })
                    .map { max($0.destination, Int64(deletedThrough)) } ?? Int64(deletedThrough)
                try CopyPlan.Setting.set(db, [("events_deleted_through", Double(through))])
            }
            try db.execute(
                sql: "DELETE FROM jobq_store_settings WHERE name IN (?, ?, ?)",
                arguments: [CopyPlan.Setting.source, CopyPlan.Setting.eventsMajor, CopyPlan.Setting.eventsID])
            var settings = [(name: CopyPlan.Setting.finishedAt, value: now)]
            if !mapping.idsKept {
                settings.append((CopyPlan.Setting.renumberedThrough, Double(mapping.newestDestination)))
            }
            try CopyPlan.Setting.set(db, settings)
        }
    }
}
