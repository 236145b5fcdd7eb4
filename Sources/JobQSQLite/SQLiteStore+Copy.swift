import JobQCore
import JobQSQL

extension SQLiteStore {
    func columns(ofTable name: String, _ db: SQLiteTransaction) throws -> [String] {
        try db.fetchAll(
            String.self, sql: "SELECT name FROM pragma_table_info(?) ORDER BY cid",
            arguments: [StoreTables.prefix + name])
    }

    /// Rows inserted with their ids move each table's AUTOINCREMENT counter past them; jobs and
    /// events then take the higher of their two counters, as they share one (``EventOutbox``).
    func advanceIDsAfterCopy(_ db: SQLiteTransaction) throws {
        for table in ["jobq_jobs", "jobq_events"] {
            try db.execute(
                sql: """
                    INSERT INTO sqlite_sequence (name, seq) SELECT ?1, 0
                    WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = ?1)
                    """,
                arguments: [table])
        }
        try db.execute(sql: EventOutbox.levelCountersSQL)
    }
}
