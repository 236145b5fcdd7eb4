import Foundation
import GRDB
import Testing

@testable import JobQCore
@testable import JobQSQL
@testable import JobQSQLite

/// Stores written by every schema version that shipped, under Tests/Fixtures, each upgraded to
/// the latest version by the tests. `JOBQ_WRITE_FIXTURES=1 swift test --filter writeFixture`
/// writes the fixture of a version once, when that version ships; the fixture is then kept as is.
@Suite("Fixture stores of every schema version")
struct FixtureTests {
    static let directory = ReadmeTests.root.appendingPathComponent("Tests/Fixtures")

    /// The columns of `jobs` as schema version 1 defined them: what must survive every upgrade.
    static let jobColumns =
        "id, queue, executor, payload, priority, state, attempt, max_attempts, run_at, timeout, result, error, created_at, started_at, finished_at"

    static var fixtures: [(version: Int, url: URL)] {
        SchemaMigration.all.map { ($0.version, directory.appendingPathComponent("store-v\($0.version).sqlite")) }
    }

    @Test func everyShippedSchemaVersionHasAFixture() {
        for (version, url) in Self.fixtures {
            #expect(
                FileManager.default.fileExists(atPath: url.path),
                "schema version \(version) needs its fixture \(url.lastPathComponent)")
        }
    }

    @Test(arguments: SchemaMigration.all.map(\.version))
    func fixtureUpgradesToTheLatestVersionKeepingEveryJob(version: Int) async throws {
        let fixture = Self.directory.appendingPathComponent("store-v\(version).sqlite")
        let store = try TemporaryStore()
        try FileManager.default.copyItem(at: fixture, to: URL(fileURLWithPath: store.path))
        // Stores before version 14 named their tables bare; 14 gave them the `jobq_` prefix.
        let table = version < SchemaMigration.prefixVersion ? "jobs" : "jobq_jobs"
        let before = try DatabaseQueue(path: store.path).read { db in
            (
                try SchemaMigrator.currentVersion(db),
                try Row.fetchAll(db, sql: "SELECT \(Self.jobColumns) FROM \(table) ORDER BY id"),
                try Int.fetchOne(db, sql: "SELECT seq FROM sqlite_sequence WHERE name = '\(table)'")
            )
        }
        #expect(before.0 == version)
        // `waiting` came with schema version 5.
        let states = Set(JobState.allCases.map(\.rawValue)).subtracting(version < 5 ? ["waiting"] : [])
        #expect(Set(before.1.map { $0["state"] as String }) == states, "the fixture holds jobs in every state")

        let queue = try JobQueue(path: store.path)
        let after = try DatabaseQueue(path: store.path).read { db -> (Int, [Row], Int?, Int, [String]) in
            (
                try SchemaMigrator.currentVersion(db),
                try Row.fetchAll(db, sql: "SELECT \(Self.jobColumns) FROM jobq_jobs ORDER BY id"),
                try Int.fetchOne(db, sql: "SELECT seq FROM sqlite_sequence WHERE name = 'jobq_jobs'"),
                try Int.fetchOne(db, sql: "PRAGMA user_version") ?? 0,
                try String.fetchAll(
                    db, sql: "SELECT name FROM sqlite_master WHERE name NOT LIKE 'jobq\\_%' ESCAPE '\\'")
            )
        }
        #expect(after.0 == SchemaMigration.latestVersion)
        // Every table and index has the prefix; a store from before it keeps version 14 in
        // `user_version`, so that a jobq from before the prefix refuses it as newer.
        #expect(after.4.filter { !$0.hasPrefix("sqlite_") } == [])
        #expect(after.3 == (version < SchemaMigration.prefixVersion ? SchemaMigration.prefixVersion : 0))
        #expect(after.1 == before.1, "every job kept its id, state, payload, result and attempts")
        // Version 16 brings the jobs' counter up to the events' (they share it from then on).
        #expect(
            (after.2 ?? 0) >= (before.2 ?? 0),
            "ids of pruned jobs are never handed out again (the rebuild of version 5 keeps the counter)")

        // The upgraded store works: its jobs can be read, retried and run.
        let dead = try #require(try await queue.jobs(state: .dead).first)
        try await queue.retry(dead.id)
        #expect(try await queue.job(dead.id)?.state == .ready)

        let backups = try FileManager.default.contentsOfDirectory(atPath: store.directory.path).filter {
            $0.hasSuffix(".backup")
        }
        if version < SchemaMigration.latestVersion {
            #expect(backups.count == 1)
            #expect(backups.first?.hasPrefix("jobq.sqlite.v\(version)-") == true)
        } else {
            #expect(backups.isEmpty, "a store already at the latest version is not backed up")
        }
    }

    /// A store upgraded from any earlier version has exactly the schema of a store made new:
    /// the same tables, columns, constraints and indexes under the same names (a new store
    /// takes the migrations before the prefix with the names prefixed, an old one renames).
    @Test(arguments: SchemaMigration.all.map(\.version))
    func upgradedStoreHasTheSchemaOfANewOne(version: Int) throws {
        func schema(_ path: String) throws -> [String] {
            try DatabaseQueue(path: path).read { db in
                try Row.fetchAll(db, sql: "SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name").map
                {
                    row in
                    let sql = (row["sql"] as String?) ?? ""
                    let normalized = sql.replacingOccurrences(of: "\"", with: "").split(whereSeparator: \.isWhitespace)
                        .joined(separator: " ")
                    return
                        "\(row["type"] as String) \(row["name"] as String) on \(row["tbl_name"] as String): \(normalized)"
                }
            }
        }
        let fresh = try TemporaryStore()
        _ = try JobQueue(path: fresh.path)
        let upgraded = try TemporaryStore()
        try FileManager.default.copyItem(
            at: Self.directory.appendingPathComponent("store-v\(version).sqlite"),
            to: URL(fileURLWithPath: upgraded.path))
        _ = try JobQueue(path: upgraded.path)
        let expected = try schema(fresh.path)
        let found = try schema(upgraded.path)
        #expect(expected.count > 40)
        for (line, other) in zip(expected, found) where line != other { #expect(other == line) }
        #expect(found.count == expected.count)
    }

    /// Writes the fixture for the newest schema version (or `JOBQ_FIXTURE_VERSION`), if it has
    /// none yet.
    @Test(.enabled(if: ProcessInfo.processInfo.environment["JOBQ_WRITE_FIXTURES"] == "1"))
    func writeFixture() throws {
        let version =
            Int(ProcessInfo.processInfo.environment["JOBQ_FIXTURE_VERSION"] ?? "") ?? SchemaMigration.latestVersion
        let url = Self.directory.appendingPathComponent("store-v\(version).sqlite")
        guard !FileManager.default.fileExists(atPath: url.path) else { return }
        try FileManager.default.createDirectory(at: Self.directory, withIntermediateDirectories: true)
        let writer = try DatabaseQueue(path: url.path)
        try SchemaMigrator(
            writer: writer, path: nil, migrations: Array(SchemaMigration.all.prefix { $0.version <= version })
        )
        .migrate(backup: false)
        try writer.write { db in
            let t = 1_795_000_000.0
            // One job per state, with payloads, results, errors and attempts as each state has them.
            let rows: [[DatabaseValueConvertible?]] = [
                ["default", "sleep", #"{"seconds":1}"#, 0, "scheduled", 0, 3, t + 86_400, nil, nil, nil, t, nil, nil],
                ["default", "sum", #"{"a":1,"b":2}"#, 5, "ready", 0, 3, t, nil, nil, nil, t, nil, nil],
                ["mail", "shell", #"{"argv":["echo","hi"]}"#, 0, "running", 1, 3, t, 30.5, nil, nil, t, t + 1, nil],
                [
                    "default", "sum", #"{"a":40,"b":2}"#, -1, "succeeded", 1, 3, t, nil, #"{"sum":42}"#, nil, t, t + 1,
                    t + 2
                ],
                [
                    "default", "fail", #"{"message":"flaky"}"#, 0, "failed", 2, 5, t + 60, nil, nil, "flaky", t, t + 3,
                    nil
                ],
                ["default", "fail", #"{"message":"boom"}"#, 0, "dead", 3, 3, t, nil, nil, "boom", t, t + 4, t + 5],
                ["other", "echo", #"{"x":"ünïcødé ✓"}"#, 2, "cancelled", 0, 3, t, nil, nil, nil, t, nil, t + 6]
            ]
            for row in rows {
                try db.execute(
                    sql: """
                        INSERT INTO jobq_jobs (queue, executor, payload, priority, state, attempt, max_attempts, run_at, timeout,
                            result, error, created_at, started_at, finished_at)
                        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                        """,
                    arguments: StatementArguments(row.lazy.map { $0 }))
            }
            try db.execute(
                sql: "UPDATE jobq_jobs SET worker_id = 'fixture-worker', lease_until = ? WHERE state = 'running'",
                arguments: [t + 30])
            try db.execute(sql: "INSERT INTO jobq_queues (name, paused) VALUES ('mail', 1)")
            if try db.tableExists("jobq_events") {
                try db.execute(
                    sql:
                        "UPDATE jobq_jobs SET progress = 0.5, progress_message = 'half', name = 'nightly' WHERE state = 'running'"
                )
                try db.execute(
                    sql:
                        "INSERT INTO jobq_batches (name, state, total, succeeded, created_at) VALUES ('b1', 'closed', 2, 1, ?)",
                    arguments: [t])
                try db.execute(sql: "UPDATE jobq_jobs SET batch = 'b1' WHERE state IN ('succeeded', 'ready')")
                try db.execute(
                    sql: "INSERT INTO jobq_tracking_sets (name, round, created_at) VALUES ('pair', 3, ?)",
                    arguments: [t])
                try db.execute(
                    sql:
                        "INSERT INTO jobq_tracking_members (set_name, kind, member, fresh) VALUES ('pair', 'executor', 'sum', 1), ('pair', 'job', 'nightly', 0)"
                )
                try db.execute(
                    sql:
                        "INSERT INTO jobq_events (job_id, kind, queue, executor, data, created_at) SELECT id, 'enqueued', queue, executor, '{}', created_at FROM jobq_jobs"
                )
            }
            if try db.tableExists("jobq_workflows") {
                // A workflow half way: its first step succeeded, the second waits for it... and a
                // lane whose tail waits, a dependency edge, a shared context.
                try db.execute(
                    sql:
                        "INSERT INTO jobq_workflows (id, name, state, context, root_group, created_at) VALUES (1, 'wf', 'running', '{\"k\":1}', 1, ?)",
                    arguments: [t])
                try db.execute(
                    sql: """
                        INSERT INTO jobq_workflow_groups (id, workflow_id, parent_id, position, kind, path, state, total, succeeded)
                        VALUES (1, 1, NULL, 0, 'sequence', '$', 'running', 2, 1)
                        """)
                try db.execute(
                    sql:
                        "UPDATE jobq_jobs SET workflow_id = 1, group_id = 1, group_position = 0 WHERE state = 'succeeded'"
                )
                try db.execute(
                    sql: """
                        INSERT INTO jobq_jobs (queue, executor, payload, state, run_at, created_at, unmet, workflow_id, group_id, group_position,
                            input_from, lane)
                        VALUES ('default', 'echo', '{}', 'waiting', ?, ?, 1, 1, 1, 1, 'job:4', 'l')
                        """,
                    arguments: [t, t])
                try db.execute(
                    sql:
                        "INSERT INTO jobq_dependencies (job_id, depends_on) SELECT id, 3 FROM jobq_jobs WHERE state = 'waiting'"
                )
                try db.execute(
                    sql:
                        "INSERT INTO jobq_lanes (name, tail_job_id, created_at) SELECT 'l', id, ? FROM jobq_jobs WHERE state = 'waiting'",
                    arguments: [t])
            }
            if try db.tableExists("jobq_trees") {
                // A tree half way: its root succeeded and created one job of its child node.
                try db.execute(
                    sql:
                        "INSERT INTO jobq_workflows (id, name, state, root_group, created_at) VALUES (2, 'tree', 'running', 2, ?)",
                    arguments: [t])
                try db.execute(
                    sql: """
                        INSERT INTO jobq_workflow_groups (id, workflow_id, parent_id, position, kind, path, state, total, succeeded)
                        VALUES (2, 2, NULL, 0, 'sequence', '$', 'running', 1, 0)
                        """)
                try db.execute(
                    sql: "INSERT INTO jobq_trees (id, workflow_id, root_group, max_jobs, jobs) VALUES (1, 2, 3, 100, 2)"
                )
                try db.execute(
                    sql: """
                        INSERT INTO jobq_tree_nodes (id, tree_id, parent_id, position, name, path, executor, each_pointer, on_failure, queue,
                            priority, max_attempts, leaf)
                        VALUES (1, 1, NULL, 0, 'book', 'book', 'echo', NULL, 'failTree', 'default', 0, 3, 0),
                               (2, 1, 1, 0, 'page', 'book/page', 'echo', '/pages', 'continue', 'default', 0, 3, 1)
                        """)
                try db.execute(
                    sql: """
                        INSERT INTO jobq_workflow_groups (id, workflow_id, parent_id, position, kind, path, on_failure, state, total, succeeded,
                            tree_node, jobs_succeeded)
                        VALUES (3, 2, 2, 0, 'tree', '$.sequence[0]', 'continue', 'running', 2, 1, 1, 1)
                        """)
                try db.execute(
                    sql: """
                        INSERT INTO jobq_jobs (queue, executor, payload, state, attempt, run_at, created_at, finished_at, result, workflow_id,
                            group_id, group_position, tree_node)
                        VALUES ('default', 'echo', '{"pages":[1]}', 'succeeded', 1, ?1, ?1, ?1, '{"pages":[1]}', 2, 3, 0, 1),
                               ('default', 'echo', '1', 'ready', 0, ?1, ?1, NULL, NULL, 2, 3, 1, 2)
                        """,
                    arguments: [t])
            }
            if try db.tableExists("jobq_schedules") {
                // A schedule that made one job and waits for its next occurrence.
                try db.execute(
                    sql: """
                        INSERT INTO jobq_schedules (name, executor, payload, queue, priority, max_attempts, kind, start_at, every, times,
                            missed, catch_up_limit, next_run_at, made, created_at, updated_at)
                        VALUES ('tick', 'sum', '{"a":1,"b":1}', 'default', 0, 3, 'every', ?1, 60, 10, 'skip', 100, ?1 + 60, 1, ?1, ?1)
                        """,
                    arguments: [t])
                try db.execute(
                    sql: """
                        INSERT INTO jobq_jobs (queue, executor, payload, state, attempt, run_at, created_at, finished_at, result, name, schedule,
                            occurrence)
                        VALUES ('default', 'sum', '{"a":1,"b":1}', 'succeeded', 1, ?1, ?1, ?1, '{"sum":2}', 'tick', 'tick', ?1)
                        """,
                    arguments: [t])
            }
            if try db.tableExists("jobq_data_migrations") {
                try db.execute(
                    sql:
                        "INSERT INTO jobq_data_migrations (name, version, target_version, initialized_at, updated_at) VALUES ('notes', 2, 3, ?, ?)",
                    arguments: [t, t])
            }
        }
        try writer.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA journal_mode = DELETE")
            try db.execute(sql: "VACUUM")
        }
        try writer.close()
    }
}
