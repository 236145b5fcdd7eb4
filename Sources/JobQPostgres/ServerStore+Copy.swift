import JobQCore
import JobQSQL

extension ServerStore {
    func columns(ofTable name: String, _ db: ServerTransaction) throws -> [String] {
        try db.fetchAll(
            String.self,
            sql: """
                SELECT column_name FROM information_schema.columns WHERE table_schema = ? AND table_name = ?
                ORDER BY ordinal_position
                """,
            arguments: [server.settings.schemaNames.schema, name])
    }

    /// Rows inserted with their ids leave each identity's sequence where it was: it is set to
    /// the table's highest id.
    func advanceIDsAfterCopy(_ db: ServerTransaction) throws {
        let names = server.settings.schemaNames
        for table in ["jobs", "events", "workflows", "workflow_groups", "trees", "tree_nodes", "signals"] {
            // The sequence's table as text: its quotes doubled inside the literal.
            let qualified = names.table(table).replacingOccurrences(of: "'", with: "''")
            try db.execute(
                sql: """
                    SELECT setval(pg_get_serial_sequence('\(qualified)', 'id'), top)
                    FROM (SELECT MAX(id) AS top FROM jobq_\(table)) AS highest WHERE top IS NOT NULL
                    """)
        }
    }
}
