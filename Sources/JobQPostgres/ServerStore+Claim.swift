import Foundation
import JobQCore
import JobQSQL

/// A worker's claim on PostgreSQL: one statement per queue, committed on its own, one round trip
/// where the shared SQL's claim transaction (`SQLStore.claimInTransaction`) takes eight (BEGIN, the lock, due jobs,
/// paused queues, the claim, start marks, their events, COMMIT).
///
/// The statement takes the shared write lock first (its `lock` CTE, read by a condition on no
/// row, which PostgreSQL evaluates once before it reads the first job, so the lock is held
/// before any row lock), locks up to `limit` ready jobs of the queue in claim order with SKIP
/// LOCKED, marks them running under the worker's lease, records the start of the first
/// `startingNow` (those that go to free slots at once) with their `started` events, and returns
/// the jobs with their workflow's shared context. Its last column says whether some job on the
/// worker's queues has fallen due (a scheduled job or a retry): then the due jobs are made ready
/// in a second statement and the queue is claimed again. A job that falls due is claimed on the
/// claim after it fell due rather than by it, so it can follow ready jobs of lower priority
/// claimed in that instant; anything that fell due earlier is ready before the claim reads.
///
/// A queue with a concurrency or rate limit is claimed by the shared SQL's transaction instead,
/// which counts its running jobs and recent starts under the queue's row lock.
///
/// Starts are stamped with the server's clock, read once the lock is held. The worker's clock,
/// read before the statement was sent, can precede the commit that made the job ready: a
/// lane's next job was seen "starting" before the one before it had finished. (The shared SQL
/// reads the worker's clock inside its transaction, after the lock.) Across machines, as with
/// every time jobq records, the clocks are assumed to agree.
extension ServerStore {
    func claim(queues: [String], limit: Int, workerID: String, lease: Duration, startingNow: Int)
        async throws -> [ClaimedJob]
    {
        guard limit > 0 else { return [] }
        var claimed: [ClaimedJob] = []
        claimed.reserveCapacity(limit)
        let queueList = ArrayLiteral.texts(queues)
        let workerJSON = JSONText.string(workerID)
        var promoted = false
        var index = queues.startIndex
        // Each queue's claim commits on its own: a failure on a later queue hands over the jobs
        // already committed (``QueueClaimFailure``), never drops them.
        do {
            while index < queues.endIndex, claimed.count < limit {
                // The lease starts now, as the statement is sent: it takes no lock it would wait for.
                let now = SharedSQL.now()
                let starting = max(0, startingNow - claimed.count)
                var arguments = ServerArguments<Claim>()
                arguments[.worker] = .text(workerID)
                arguments[.leaseUntil] = .real(now + lease.inSeconds)
                arguments[.queue] = .text(queues[index])
                arguments[.limit] = .integer(Int64(limit - claimed.count))
                arguments[.startingNow] = .integer(Int64(starting))
                arguments[.workerJSON] = .text(workerJSON)
                arguments[.now] = .real(now)
                arguments[.queues] = .text(queueList)
                let result =
                    starting > 0
                    ? try await server.autocommit(ClaimStartingJobs.self, arguments.values, line: .claims)
                    : try await server.autocommit(ClaimJobs.self, arguments.values, line: .claims)
                var due = false
                var limited = false
                for values in result.rows {
                    let row = SQLRow(names: [], values: values)
                    due = due || row.int64(Self.dueColumn) != 0
                    limited = limited || row.int64(Self.limitedColumn) != 0
                    // The row that carries only `due` and `limited`.
                    guard row.optionalInt64(0) != nil else { continue }
                    var job = ClaimedJob(row)
                    job.sharedJSON = row.optionalString(Self.sharedColumn)
                    job.startRecorded = row.optionalDouble(Self.startedColumn) != nil
                    claimed.append(job)
                }
                if due, !promoted {
                    do {
                        try await promoteDue()
                    } catch {
                        // Not this queue's failure: every queue's due jobs are promoted together.
                        throw QueueClaimFailure(queue: nil, claimed: [], underlying: error)
                    }
                    promoted = true
                    continue  // the same queue again: what was due may be on it
                }
                if limited {
                    // Limits are counted under the queue's row lock, in a transaction
                    // (`SharedSQL.capacity`): one statement would count with the snapshot it began
                    // with, before it waited for the lock.
                    claimed += try await claimInTransaction(
                        queues: [queues[index]], limit: limit - claimed.count, workerID: workerID, lease: lease,
                        startingNow: max(0, startingNow - claimed.count))
                }
                index += 1
            }
        } catch {
            if !claimed.isEmpty { commitObservers.callAll() }
            throw QueueClaimFailure.wrapping(
                error, queue: index < queues.endIndex ? queues[index] : nil, claimedBefore: claimed)
        }
        if !claimed.isEmpty { commitObservers.callAll() }
        return claimed
    }

    /// Makes due scheduled and retrying jobs ready, skipping rows another claim is promoting.
    private func promoteDue() async throws {
        var arguments = ServerArguments<Promote>()
        arguments[.now] = .real(SharedSQL.now())
        _ = try await server.autocommit(PromoteDueJobs.self, arguments.values, line: .claims)
    }

    /// The due jobs' parameter: the time now.
    fileprivate enum Promote: Int32, ServerParameter { case now = 1 }

    fileprivate static let promoteSQL = promoteDueSQL(now: "\(Promote.now)", takingTheLock: true)

    /// Makes due scheduled and retrying jobs ready, skipping rows another claim is promoting;
    /// `takingTheLock` for a statement that commits on its own, which takes the shared write
    /// lock first (a claim transaction holds it already).
    private static func promoteDueSQL(now: String, takingTheLock: Bool) -> String {
        let lock = "WITH lock AS MATERIALIZED (SELECT \(PostgresServer.lockAndNotify(.shared, .nobody)))\n"
        return """
            \(takingTheLock ? lock : "")UPDATE jobq_jobs SET state = 'ready' WHERE id IN (
                SELECT id FROM jobq_jobs WHERE state IN ('scheduled', 'failed') AND run_at <= CAST(\(now) AS double precision)
                    \(takingTheLock ? "AND (SELECT true FROM lock)" : "")
                FOR UPDATE SKIP LOCKED)
            """
    }

    /// Columns after `ClaimedJob.columns` (0-19) in a claim's rows.
    private static let sharedColumn: Int32 = 20
    private static let startedColumn: Int32 = 21
    private static let dueColumn: Int32 = 22
    private static let limitedColumn: Int32 = 23

    /// A claim's parameters: the worker, the lease's end, the queue, how many jobs at most, how
    /// many of them start now, the worker as a JSON string (for the `started` events), now (the
    /// worker's clock: for due jobs, and for deadlines to start), the worker's queues (a text
    /// array).
    fileprivate enum Claim: Int32, ServerParameter {
        case worker = 1
        case leaseUntil, queue, limit, startingNow, workerJSON, now, queues
    }

    private static func claimSQL(notifying audience: CommitAudience) -> String {
        typealias P = Claim
        let returned = ClaimedJob.columns.split(separator: ",").map {
            "jobq_jobs." + $0.trimmingCharacters(in: .whitespacesAndNewlines)
        }.joined(separator: ", ")
        let selected = ClaimedJob.columns.split(separator: ",").map {
            "claimed." + $0.trimmingCharacters(in: .whitespacesAndNewlines)
        }.joined(separator: ", ")
        return """
            WITH lock AS MATERIALIZED (SELECT \(PostgresServer.lockAndNotify(.shared, audience))),
            stamp AS MATERIALIZED (SELECT CAST(extract(epoch FROM clock_timestamp()) AS double precision) AS now FROM lock),
            picked AS (
                SELECT ready.id, row_number() OVER (ORDER BY \(SharedSQL.claimOrder(of: "ready"))) AS position
                FROM (
                    SELECT id, priority, run_at FROM jobq_jobs
                    WHERE state = 'ready' AND queue = \(P.queue) AND (SELECT true FROM lock)
                        AND \(SharedSQL.notExpired(at: "CAST(\(P.now) AS double precision)"))
                        AND \(SharedSQL.executorNotPaused)
                        AND NOT EXISTS (
                            SELECT 1 FROM jobq_queues WHERE name = \(P.queue)
                                AND (paused <> 0 OR concurrency_limit IS NOT NULL OR rate_limit IS NOT NULL))
                    ORDER BY \(SharedSQL.claimOrder) LIMIT CAST(\(P.limit) AS bigint)
                    FOR UPDATE SKIP LOCKED
                ) AS ready
            ),
            claimed AS (
                UPDATE jobq_jobs SET state = 'running', attempt = jobq_jobs.attempt + 1, worker_id = \(P.worker),
                    lease_until = CAST(\(P.leaseUntil) AS double precision),
                    started_at = CASE WHEN picked.position <= CAST(\(P.startingNow) AS bigint) THEN (SELECT now FROM stamp) END
                FROM picked WHERE jobq_jobs.id = picked.id
                RETURNING \(returned), (SELECT context FROM jobq_workflows WHERE jobq_workflows.id = jobq_jobs.workflow_id) AS shared,
                    jobq_jobs.started_at, picked.position
            ),
            started AS (
                INSERT INTO jobq_events (job_id, kind, queue, executor, batch, data, created_at, workflow_id)
                SELECT id, 'started', queue, executor, batch,
                    CAST('{"attempt":' || attempt || ',"worker":' || \(P.workerJSON) || '}' AS json), started_at, workflow_id
                FROM claimed WHERE started_at IS NOT NULL ORDER BY position
            )
            SELECT \(selected), claimed.shared, claimed.started_at, outlook.due, outlook.limited
            FROM (
                SELECT CAST(EXISTS (
                    SELECT 1 FROM jobq_jobs WHERE state IN ('scheduled', 'failed') AND run_at <= CAST(\(P.now) AS double precision)
                        AND queue = ANY (CAST(\(P.queues) AS text[]))
                ) AS integer) AS due,
                CAST(EXISTS (
                    SELECT 1 FROM jobq_queues WHERE name = \(P.queue) AND paused = 0
                        AND (concurrency_limit IS NOT NULL OR rate_limit IS NOT NULL)
                ) AS integer) AS limited
            ) AS outlook LEFT JOIN claimed ON true
            ORDER BY claimed.position
            """
    }

    fileprivate static let claimSQL = claimSQL(notifying: .nobody)
    /// With start marks, whose events followers are told of.
    fileprivate static let claimStartingSQL = claimSQL(notifying: .followers)
}

private enum ClaimJobs: StatementText {
    static let sql = ServerStore.claimSQL
}

private enum ClaimStartingJobs: StatementText {
    static let sql = ServerStore.claimStartingSQL
}

private enum PromoteDueJobs: StatementText {
    static let sql = ServerStore.promoteSQL
}

/// PostgreSQL's claim statements inside a claim transaction (a limited queue's claim, which
/// counts places under the queue's row lock; others claim in one statement of their own,
/// above). Other claims run at the same time: rows another claim holds or
/// promotes are skipped (SKIP LOCKED), so claims never wait for each other.
extension ServerStore {
    static func promoteDue(_ db: ServerTransaction, now: Double) throws {
        let promote = try db.statement(sql: promoteDueInTransactionSQL)
        promote.bind(PromoteInTransaction.now, now)
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

    private enum PromoteInTransaction: Int32, SQLParameter { case now = 1 }

    private static let promoteDueInTransactionSQL = promoteDueSQL(
        now: "\(PromoteInTransaction.now)", takingTheLock: false)

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
                AND \(SharedSQL.notExpired(at: "\(ClaimReady.now)")) AND \(SharedSQL.executorNotPaused)
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
