import JobQCore

/// The check that ends a copy: each table's rows counted and checksummed on both sides
/// (``CopyChecksum``, as sets: the stores may order text keys differently), the event feed
/// compared event by event in its order, which also gives each event's id on both sides.
struct CopyCheck<Source: SQLStore, Destination: SQLStore>: Sendable {
    let source: Source
    let destination: Destination
    /// Rows read per transaction.
    let pageSize = 5_000

    func run(columns: [String: [String]], payloadIndexes: [String]) async throws -> (
        tables: [StoreCopyReport.Table], mapping: EventIDMapping
    ) {
        var tables: [StoreCopyReport.Table] = []
        for table in CopyPlan.tables {
            guard let list = columns[table.name] else { continue }
            let from = try await checksum(source, table, columns: list)
            let into = try await checksum(destination, table, columns: list)
            tables.append(
                StoreCopyReport.Table(
                    name: table.name, sourceRows: from.rows, destinationRows: into.rows, sourceChecksum: from.hex,
                    destinationChecksum: into.hex))
        }
        let (events, mapping) = try await compareFeeds()
        tables.append(events)
        var fromIndexes = CopyChecksum(ordered: false)
        for pointer in payloadIndexes { fromIndexes.add([.text(pointer)]) }
        var intoIndexes = CopyChecksum(ordered: false)
        for index in try await destination.payloadIndexes() { intoIndexes.add([.text(index.pointer)]) }
        tables.append(
            StoreCopyReport.Table(
                name: "payload_indexes", sourceRows: fromIndexes.rows, destinationRows: intoIndexes.rows,
                sourceChecksum: fromIndexes.hex, destinationChecksum: intoIndexes.hex))
        return (tables, mapping)
    }

    /// A table's rows on one side, as a set; a table keyed by id read in pages.
    private func checksum<Store: SQLStore>(_ store: Store, _ table: CopyPlan.Table, columns: [String]) async throws
        -> CopyChecksum
    {
        var checksum = CopyChecksum(ordered: false)
        switch table.way {
        case .replaceWhole:
            let rows = try await store.read { db in try CopyRows.all(db, of: table, columns: columns) }
            for row in rows { checksum.add(row) }
        case .appendByID:
            var after: Int64 = 0
            let (sqlName, size) = (table.sqlName, pageSize)
            while true {
                let from = after
                let rows = try await store.read { db in
                    try CopyRows.page(db, of: sqlName, columns: columns, after: from, limit: size)
                }
                for row in rows { checksum.add(row) }
                guard let last = rows.last, rows.count == size else { break }
                after = CopyRows.id(of: last, columns: columns) ?? after
            }
        }
        return checksum
    }

    /// Both feeds side by side in their order: counts, checksums of the events without their
    /// ids, and the ids that differ.
    private func compareFeeds() async throws -> (StoreCopyReport.Table, EventIDMapping) {
        var from = CopyChecksum(ordered: true)
        var into = CopyChecksum(ordered: true)
        var renumbered: [(source: Int64, destination: Int64)] = []
        var fromPosition = CopyFeed.Position.start
        var intoPosition = CopyFeed.Position.start
        var newest: (source: Int64, destination: Int64) = (0, 0)
        let size = pageSize
        while true {
            let (fromAt, intoAt) = (fromPosition, intoPosition)
            let fromPage = try await source.read { db in try CopyFeed.page(db, after: fromAt, limit: size) }
            let intoPage = try await destination.read { db in try CopyFeed.page(db, after: intoAt, limit: size) }
            for event in fromPage { from.add(event.values) }
            for event in intoPage { into.add(event.values) }
            for (a, b) in zip(fromPage, intoPage) where a.id != b.id { renumbered.append((a.id, b.id)) }
            if let last = fromPage.last {
                fromPosition = CopyFeed.Position(major: last.major, id: last.id)
                newest.source = last.id
            }
            if let last = intoPage.last {
                intoPosition = CopyFeed.Position(major: last.major, id: last.id)
                newest.destination = last.id
            }
            if fromPage.count < size && intoPage.count < size { break }
        }
        let table = StoreCopyReport.Table(
            name: "events", sourceRows: from.rows, destinationRows: into.rows, sourceChecksum: from.hex,
            destinationChecksum: into.hex)
        return (
            table,
            EventIDMapping(renumbered: renumbered, newestSource: newest.source, newestDestination: newest.destination)
        )
    }
}
