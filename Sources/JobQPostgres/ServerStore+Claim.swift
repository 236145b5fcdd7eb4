import Foundation
import JobQCore
import JobQSQL

/// A worker's claim on PostgreSQL: one statement per queue, committed on its own, one round trip
/// where the store SQL's claim transaction (`SQLStore.claimInTransaction`) takes eight (BEGIN, the lock, due jobs,
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
/// A queue with a concurrency or rate limit is claimed by the store SQL's transaction instead,
/// which counts its running jobs and recent starts under the queue's row lock.
///
/// Starts are stamped with the server's clock, read once the lock is held. The worker's clock,
/// read before the statement was sent, can precede the commit that made the job ready: a
/// lane's next job was seen "starting" before the one before it had finished. (The store SQL
/// reads the worker's clock inside its transaction, after the lock.) Across machines, as with
/// every time jobq records, the clocks are assumed to agree.
extension ServerStore {
    /// Steps through the ``ClaimLoop``: an unlimited queue's claim and the promotion of due jobs
    /// are statements of their own, a limited queue's claim a transaction
    /// (`StoreSQL.claim(_:_:workerID:leaseUntil:)`, which counts places under the queue's row
    /// lock: one statement would count with the snapshot it began with, before it waited for
    /// the lock). Each commits on its own: a failure on a later queue hands over the jobs
    /// already committed (``QueueClaimFailure``), never drops them.
    func claim(queues: [String], limit: Int, workerID: String, lease: Duration, startingNow: Int)
        async throws -> [ClaimedJob]
    {
        guard limit > 0 else { return [] }
        var loop = ClaimLoop(
            ClaimRequest(queues: queues, limit: limit, lease: lease, startingNow: startingNow), settings: nil)
        let queueList = ArrayLiteral.texts(queues)
        let workerJSON = JSONText.string(workerID)
        defer { if !loop.claimed.isEmpty { commitObservers.callAll() } }
        while let step = loop.next() {
            do {
                switch step {
                case .promoteDue:
                    try await promoteDue()
                    loop.promoted()
                case .claim(let part):
                    let found = try await claimStatement(
                        part, workerID: workerID, workerJSON: workerJSON, lease: lease, queueList: queueList)
                    loop.took(found.jobs, dueFound: found.due, limited: found.limited)
                case .claimLimited(let part):
                    let audience: CommitAudience = part.startingNow > 0 ? .followers : .nobody
                    loop.took(
                        try await write(.short, audience: audience, lock: .shared) { db in
                            // The lease starts once the transaction holds the lock, as SQLite's.
                            try StoreSQL.claim(
                                db, part, workerID: workerID, leaseUntil: StoreSQL.now() + lease.inSeconds)
                        })
                }
            } catch {
                throw loop.failure(error, committed: true)
            }
        }
        return loop.claimed
    }

    /// One queue's claim in one statement: its jobs, whether jobs on the worker's queues have
    /// fallen due, and whether the queue is limited (then it claimed nothing).
    private func claimStatement(
        _ part: ClaimLoop.QueuePart, workerID: String, workerJSON: String, lease: Duration, queueList: String
    ) async throws -> (jobs: [ClaimedJob], due: Bool, limited: Bool) {
        // The lease starts now, as the statement is sent: it takes no lock it would wait for.
        let now = StoreSQL.now()
        var arguments = ServerArguments<Claim>()
        arguments[.worker] = .text(workerID)
        arguments[.leaseUntil] = .real(now + lease.inSeconds)
        arguments[.queue] = .text(part.queue)
        arguments[.limit] = .integer(Int64(part.limit))
        arguments[.startingNow] = .integer(Int64(part.startingNow))
        arguments[.workerJSON] = .text(workerJSON)
        arguments[.now] = .real(now)
        arguments[.queues] = .text(queueList)
        let result =
            part.startingNow > 0
            ? try await server.autocommit(ClaimStartingJobs.self, arguments.values, line: .claims)
            : try await server.autocommit(ClaimJobs.self, arguments.values, line: .claims)
        var found: (jobs: [ClaimedJob], due: Bool, limited: Bool) = ([], false, false)
        for values in result.rows {
            let row = SQLRow(names: [], values: values)
            found.due = found.due || row.int64(Self.dueColumn) != 0
            found.limited = found.limited || row.int64(Self.limitedColumn) != 0
            // The row that carries only `due` and `limited`.
            guard row.optionalInt64(0) != nil else { continue }
            var job = ClaimedJob(row)
            job.sharedJSON = row.optionalString(Self.sharedColumn)
            job.startRecorded = row.optionalDouble(Self.startedColumn) != nil
            found.jobs.append(job)
        }
        return found
    }

    /// Makes due scheduled and retrying jobs ready, skipping rows another claim is promoting.
    private func promoteDue() async throws {
        var arguments = ServerArguments<Promote>()
        arguments[.now] = .real(StoreSQL.now())
        _ = try await server.autocommit(PromoteDueJobs.self, arguments.values, line: .claims)
    }

    /// The due jobs' parameter: the time now.
    fileprivate enum Promote: Int32, ServerParameter { case now = 1 }

    /// Committed on its own, so it takes the shared write lock first (as a transaction's
    /// prelude would).
    fileprivate static let promoteSQL = """
        WITH lock AS MATERIALIZED (SELECT \(PostgresServer.lockAndNotify(.shared, .nobody)))
        UPDATE jobq_jobs SET state = 'ready' WHERE id IN (
            SELECT id FROM jobq_jobs WHERE state IN ('scheduled', 'failed') AND run_at <= CAST(\(Promote.now) AS double precision)
                AND (SELECT true FROM lock)
            FOR UPDATE SKIP LOCKED)
        """

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
                SELECT ready.id, row_number() OVER (ORDER BY \(StoreSQL.claimOrder(of: "ready"))) AS position
                FROM (
                    SELECT id, priority, run_at FROM jobq_jobs
                    WHERE state = 'ready' AND queue = \(P.queue) AND (SELECT true FROM lock)
                        AND \(StoreSQL.notExpired(at: "CAST(\(P.now) AS double precision)"))
                        AND \(StoreSQL.executorNotPaused)
                        AND NOT EXISTS (
                            SELECT 1 FROM jobq_queues WHERE name = \(P.queue)
                                AND (paused <> 0 OR concurrency_limit IS NOT NULL OR rate_limit IS NOT NULL))
                    ORDER BY \(StoreSQL.claimOrder) LIMIT CAST(\(P.limit) AS bigint)
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
