import Foundation
import JobQCore
import JobQSQL

/// PostgreSQL's claim statements inside a claim transaction (a limited queue's claim, which
/// counts places under the queue's row lock; others claim in one statement of their own,
/// `OneStatementClaim.swift`). Other claims run at the same time: rows another claim holds or
/// promotes are skipped (SKIP LOCKED), so claims never wait for each other.
extension ServerStore {
    static func promoteDue(_ db: ServerTransaction, now: Double) throws {
        let promote = try db.statement(sql: promoteDueSQL)
        promote.bind(Promote.now, now)
        try promote.run()
    }

    /// One statement; RETURNING gives no order guarantee, so the claim order is restored.
    static func claimReady(
        _ db: ServerTransaction, queue: String, limit: Int, workerID: String, leaseUntil: Double
    ) throws -> [ClaimedJob] {
        typealias P = ClaimReady
        let statement = try db.statement(sql: claimReadySQL)
        statement.bind(P.worker, workerID)
        statement.bind(P.leaseUntil, leaseUntil)
        statement.bind(P.queue, queue)
        statement.bind(P.limit, limit)
        statement.bind(P.now, SharedSQL.now())
        var rows: [ClaimedJob] = []
        while try statement.step() { rows.append(ClaimedJob(statement)) }
        statement.reset()
        return rows.sorted { $0.claimsBefore($1) }
    }

    /// Marks jobs read as ready claimed by `workerID`, and returns those it marked (all of
    /// them: the claim holds the queue's row, so no other claim takes them meanwhile).
    static func markClaimed(_ db: ServerTransaction, _ jobs: [ClaimedJob], workerID: String, leaseUntil: Double)
        throws -> [ClaimedJob]
    {
        let statement = try db.statement(sql: markClaimedSQL)
        statement.bind(MarkClaimed.worker, workerID)
        statement.bind(MarkClaimed.leaseUntil, leaseUntil)
        statement.bind(MarkClaimed.ids, SharedSQL.jsonArray(jobs.map(\.id)))
        var marked: Set<JobID> = []
        while try statement.step() { marked.insert(statement.int64(0)) }
        statement.reset()
        return jobs.filter { marked.contains($0.id) }
    }

    private enum Promote: Int32, SQLParameter { case now = 1 }

    private static let promoteDueSQL = """
        UPDATE jobq_jobs SET state = 'ready' WHERE id IN (
            SELECT id FROM jobq_jobs WHERE state IN ('scheduled', 'failed') AND run_at <= \(Promote.now)
            FOR UPDATE SKIP LOCKED)
        """

    /// A claim's parameters: who claims, until when, how many of which queue's jobs, and the
    /// time now (for deadlines to start).
    private enum ClaimReady: Int32, SQLParameter {
        case worker = 1
        case leaseUntil, queue, limit, now
    }

    /// The inner SELECT's ORDER BY is exactly the column order of the jobs_claim_order index,
    /// so the database walks the index and stops after LIMIT rows, skipping rows another claim
    /// holds.
    private static let claimReadySQL = """
        UPDATE jobq_jobs SET state = 'running', attempt = attempt + 1, worker_id = \(ClaimReady.worker),
            lease_until = \(ClaimReady.leaseUntil), started_at = NULL
        WHERE id IN (
            SELECT id FROM jobq_jobs WHERE state = 'ready' AND queue = \(ClaimReady.queue)
                AND \(SharedSQL.notExpired(at: "\(ClaimReady.now)"))
            ORDER BY \(SharedSQL.claimOrder) LIMIT \(ClaimReady.limit) FOR UPDATE SKIP LOCKED)
        RETURNING \(ClaimedJob.columns)
        """

    /// A mark's parameters: the worker, the lease's end, the ids (a JSON array).
    private enum MarkClaimed: Int32, SQLParameter {
        case worker = 1
        case leaseUntil, ids
    }

    /// The ids are joined as a set and the `ready` check is a CASE: a store whose statistics lag
    /// (a fresh backlog, never analyzed) was planned as a scan of every job testing each against
    /// the whole id list (0.6 s for a claim of a thousand), or of the partial index of ready jobs.
    private static let markClaimedSQL = """
        UPDATE jobq_jobs SET state = 'running', attempt = jobq_jobs.attempt + 1, worker_id = \(MarkClaimed.worker),
            lease_until = \(MarkClaimed.leaseUntil), started_at = NULL
        FROM unnest(CAST(translate(CAST(\(MarkClaimed.ids) AS text), '[]', '{}') AS bigint[])) AS picked(id)
        WHERE jobq_jobs.id = picked.id AND CASE WHEN jobq_jobs.state = 'ready' THEN 1 END = 1
        RETURNING jobq_jobs.id
        """
}
