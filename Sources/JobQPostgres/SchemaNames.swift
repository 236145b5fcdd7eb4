import Foundation
import JobQCore
import JobQSQL
import Synchronization

/// jobq's SQL names its tables `jobq_jobs`, `jobq_events`... (SQLite's names, ``StoreTables``);
/// on PostgreSQL they are `jobs`, `events`... in the store's schema (`jobq` by default). Every
/// statement is sent with each such name written as that schema's table (`"jobq".jobs`), so it
/// reads the same tables whatever `search_path` the connection has: jobq's own connections, an
/// application's connection enqueueing in its own transaction, a pooler that keeps no session
/// settings. A name that qualifies a column (`jobq_jobs.id`) becomes the table's bare name, as
/// PostgreSQL exposes a table in FROM by it.
///
/// ```swift
/// SchemaNames(schema: "jobq").qualified("SELECT id FROM jobq_jobs WHERE jobq_jobs.state = 'ready'")
/// // SELECT id FROM "jobq".jobs WHERE jobs.state = 'ready'
/// ```
package final class SchemaNames: Sendable {
    package let schema: String
    /// The schema as an identifier, quoted.
    package let quotedSchema: String
    private let cache = Mutex<[String: String]>([:])

    private static let all = Mutex<[String: SchemaNames]>([:])

    /// The names of `schema`, one instance (and one cache) per schema in the process.
    package static func shared(_ schema: String) -> SchemaNames {
        all.withLock { all in
            if let names = all[schema] { return names }
            let names = SchemaNames(schema: schema)
            all[schema] = names
            return names
        }
    }

    private init(schema: String) {
        self.schema = schema
        quotedSchema = Self.quoted(schema)
    }

    /// `name` as a quoted identifier: any text, its double quotes doubled.
    static func quoted(_ name: String) -> String { "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\"" }

    /// A table of the schema, qualified: `"jobq".jobs` for `jobs`.
    package func table(_ name: String) -> String { quotedSchema + "." + name }

    /// `sql` with jobq's names as the schema's tables and functions. Kept: a store sends the same
    /// few hundred statements again and again.
    package func qualified(_ sql: String) -> String {
        if let done = cache.withLock({ $0[sql] }) { return done }
        let qualified = Self.rewrite(sql) { name, qualifiesColumn in qualifiesColumn ? name : table(name) }
        cache.withLock { cache in
            // Statements built from user-chosen filters are few in kind; the bound keeps a
            // pathological caller from growing it without end.
            if cache.count > 4_096 { cache.removeAll() }
            cache[sql] = qualified
        }
        return qualified
    }

    /// `sql` with jobq's names as bare ones, for a connection whose `search_path` is the store's
    /// schema: the hot path's prepared statements, whose text postgres-nio takes as a constant.
    static func unqualified(_ sql: String) -> String {
        if let done = unqualifiedTexts.withLock({ $0[sql] }) { return done }
        let bare = rewrite(sql) { name, _ in name }
        unqualifiedTexts.withLock { $0[sql] = bare }
        return bare
    }

    /// The prepared statements' texts, a fixed few.
    private static let unqualifiedTexts = Mutex<[String: String]>([:])

    /// Functions keep their `jobq_` name in the schema; tables drop it.
    private static let functions: Set<String> = [
        "jobq_record_successes", "jobq_write_lock_key", "jobq_work_channel", "jobq_events_channel",
        "jobq_refuse_while_filled"
    ]

    private static func rewrite(_ sql: String, _ name: (String, Bool) -> String) -> String {
        StoreTables.rewrite(sql) { site in
            // Quoted text is a value (a channel is called 'jobq_events'), never a name here.
            guard !site.quoted, site.name.hasPrefix(StoreTables.prefix) else { return nil }
            if functions.contains(String(site.name)) { return name(String(site.name), site.qualifiesColumn) }
            let bare = String(site.name.dropFirst(StoreTables.prefix.count))
            return StoreTables.names.contains(bare) ? name(bare, site.qualifiesColumn) : nil
        }
    }
}
