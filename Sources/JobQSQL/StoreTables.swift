import JobQCore

/// The names of jobq's tables, so that a store shares a database with the application's own.
///
/// jobq's SQL names every table with the `jobq_` prefix (`jobq_jobs`, `jobq_events`, ...): on
/// SQLite those are the tables' names, beside the application's `jobs` or `events` in the same
/// file; a PostgreSQL store keeps the tables in a schema of their own (`jobq` by default) under
/// their bare names, and writes each `jobq_` name as that schema's table when it sends a
/// statement (`JobQPostgres`'s `SchemaNames`).
package enum StoreTables {
    /// The prefix of every table, index and function name jobq's SQL writes.
    package static let prefix = "jobq_"

    /// Every table of the current schema, without the prefix.
    package static let names: Set<String> = [
        "api_tokens", "backlog_history", "batches", "data_migration_steps", "data_migrations", "dependencies", "events",
        "history", "jobs", "lanes",
        "leases",
        "paused_executors", "payload_indexes", "queue_starts", "queues", "schedules", "schema_migrations", "signals",
        "steps", "store_settings",
        "tracking_members",
        "tracking_sets", "tree_nodes", "trees", "trigger_emits", "triggers", "workers", "workflow_groups", "workflows"
    ]

    /// Where a name stands in a statement, for ``rewrite(_:_:)``.
    package struct NameSite {
        /// The identifier, or the whole of a quoted text.
        package var name: Substring
        /// The word just before it (`FROM`, `INTO`, `TABLE`...), when only spaces separate them.
        package var previousWord: Substring?
        /// Whether it qualifies a column (`jobs.id`).
        package var qualifiesColumn: Bool
        /// Whether it is a quoted text (`'jobs'`, as `sqlite_sequence` and `pg_get_serial_sequence`
        /// take a table's name).
        package var quoted: Bool
    }

    /// `sql` with each identifier, and each single-quoted text, that `rename` gives a new name
    /// replaced by it; comments and double-quoted identifiers are left as they are. Parameters
    /// (`$1`) and words after a `.` (a qualified column) are never offered.
    package static func rewrite(_ sql: String, _ rename: (NameSite) -> String?) -> String {
        var output = ""
        output.reserveCapacity(sql.utf8.count + 64)
        let scalars = Array(sql.unicodeScalars)
        var index = 0
        var previousWord: Substring?
        func isWord(_ scalar: Unicode.Scalar) -> Bool {
            scalar == "_" || scalar == "$" || scalar.properties.isAlphabetic || ("0"..."9").contains(scalar)
        }
        func text(_ range: Range<Int>) -> String { String(String.UnicodeScalarView(scalars[range])) }
        while index < scalars.count {
            let scalar = scalars[index]
            if scalar == "-", index + 1 < scalars.count, scalars[index + 1] == "-" {
                // A comment, to the end of the line.
                var end = index
                while end < scalars.count, scalars[end] != "\n" { end += 1 }
                output += text(index..<end)
                index = end
                continue
            }
            if scalar == "'" || scalar == "\"" {
                var end = index + 1
                while end < scalars.count, scalars[end] != scalar { end += 1 }
                let inner = text((index + 1)..<min(end, scalars.count))
                let site = NameSite(name: Substring(inner), previousWord: nil, qualifiesColumn: false, quoted: true)
                if scalar == "'", let renamed = rename(site) {
                    output += "'" + renamed + "'"
                } else {
                    output += text(index..<min(end + 1, scalars.count))
                }
                index = end + 1
                previousWord = nil
                continue
            }
            if isWord(scalar) {
                var end = index
                while end < scalars.count, isWord(scalars[end]) { end += 1 }
                let word = Substring(text(index..<end))
                let afterDot = index > 0 && scalars[index - 1] == "."
                let site = NameSite(
                    name: word, previousWord: previousWord,
                    qualifiesColumn: end < scalars.count && scalars[end] == ".", quoted: false)
                output += afterDot || word.hasPrefix("$") ? String(word) : rename(site) ?? String(word)
                previousWord = word
                index = end
                continue
            }
            if !scalar.properties.isWhitespace { previousWord = nil }
            output.unicodeScalars.append(scalar)
            index += 1
        }
        return output
    }
}
