import Foundation
import GRDB
import Testing

@testable import JobQCore
@testable import JobQSQL
@testable import JobQSQLite

/// A job's insert and the changes of its state build no temporary b-tree in SQLite (an IN list
/// of states in a CHECK or a partial index's predicate did, three times per statement, about a
/// third of what a claim and a completion cost SQLite: migration 21), in a new store and in
/// one upgraded from the version before; and the due jobs' index still serves the promotion.
@Suite("SQLite: lists of states cost no temporary b-tree")
struct StateListTests {
    static let statements = [
        """
        INSERT INTO jobq_jobs (queue, executor, payload, priority, state, max_attempts, run_at, created_at)
        VALUES ('default', 'sum', '{}', 0, 'ready', 3, 0, 0)
        """,
        "UPDATE jobq_jobs SET state = 'running', attempt = attempt + 1, lease_until = 1 WHERE id = 1",
        "UPDATE jobq_jobs SET state = 'succeeded', finished_at = 1, lease_until = NULL WHERE id = 1",
        "UPDATE jobq_jobs SET state = 'failed', run_at = 5, error = 'x' WHERE id = 1",
        "INSERT INTO jobq_steps (job_id, position, name, kind, attempt, started_at) VALUES (1, 0, 'a', 'step', 1, 0)",
        EventOutbox.levelCountersSQL
    ]

    static func temporaryTrees(_ db: Database, _ sql: String) throws -> Int {
        try Row.fetchAll(db, sql: "EXPLAIN " + sql).filter { ($0["opcode"] as String) == "OpenEphemeral" }.count
    }

    @Test(arguments: ["new", "upgraded from version 20"])
    func aJobsWritesBuildNoTemporaryTree(store kind: String) throws {
        let store = try TemporaryStore()
        if kind == "new" {
            _ = try store.open()
        } else {
            try FileManager.default.copyItem(
                at: FixtureTests.directory.appendingPathComponent("store-v20.sqlite"),
                to: URL(fileURLWithPath: store.path))
            _ = try JobQueue(path: store.path)
        }
        try DatabaseQueue(path: store.path).read { db in
            for sql in Self.statements {
                let trees = try Self.temporaryTrees(db, sql)
                #expect(trees == 0, "\(sql)")
            }
            let plan = try Row.fetchAll(
                db,
                sql: "EXPLAIN QUERY PLAN SELECT id FROM jobq_jobs WHERE \(StoreSQL.dueState) AND run_at <= 5"
            ).map { $0["detail"] as String }
            #expect(plan.contains { $0.contains("jobq_jobs_due") }, "\(plan)")
            let expiring = try Row.fetchAll(
                db,
                sql: """
                    EXPLAIN QUERY PLAN SELECT id FROM jobq_jobs
                    WHERE expires_at IS NOT NULL AND \(StoreSQL.expirableState) AND expires_at <= 5
                    """
            ).map { $0["detail"] as String }
            #expect(expiring.contains { $0.contains("jobq_jobs_expiring") }, "\(expiring)")
        }
    }

    /// The IN list the test looks for is what the migration removed: the check is not vacuous.
    @Test func aStoreOfVersion20StillHasItsLists() throws {
        let store = try TemporaryStore()
        try FileManager.default.copyItem(
            at: FixtureTests.directory.appendingPathComponent("store-v20.sqlite"), to: URL(fileURLWithPath: store.path))
        try DatabaseQueue(path: store.path).read { db in
            let trees = try Self.temporaryTrees(db, Self.statements[0])
            #expect(trees > 0)
        }
    }
}
