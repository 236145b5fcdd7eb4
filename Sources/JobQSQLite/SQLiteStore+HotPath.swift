import Foundation
import JobQCore
import JobQSQL

/// SQLite's hot path: the shared SQL's transactions. A statement is no round trip here and one
/// writer holds the file at a time, so one transaction per enqueue, claim or batch of
/// completions is as fast as SQLite goes; what pays on a server (statements that commit on
/// their own, shared writes beside each other) buys nothing.
extension SQLiteStore {
    func enqueue(_ requests: [JobRequest]) async throws -> [Enqueued] {
        try await enqueueInTransaction(requests, lock: .exclusive)
    }

    func claim(queues: [String], limit: Int, workerID: String, lease: Duration, startingNow: Int) async throws
        -> [ClaimedJob]
    {
        try await claimInTransaction(
            queues: queues, limit: limit, workerID: workerID, lease: lease, startingNow: startingNow)
    }

    func complete(
        _ outcomes: [(job: ClaimedJob, outcome: AttemptOutcome)], starting: [ClaimedJob], workerID: String
    ) async throws -> (outcomes: Set<JobID>, starts: Set<JobID>) {
        try await recordInTransaction(outcomes, starting: starting, workerID: workerID)
    }

    var claimsWithCompletions: Bool { true }

    func complete(
        _ outcomes: [(job: ClaimedJob, outcome: AttemptOutcome)], starting: [ClaimedJob], workerID: String,
        claiming request: ClaimRequest
    ) async throws -> CompletionReport {
        try await recordInTransaction(outcomes, starting: starting, workerID: workerID, claiming: request)
    }

    /// Commits are serial, so the feed's order is its ids' order: one read per page.
    func events(after cursor: Int64, filter: EventFilter, limit: Int) async throws -> [JobEvent] {
        try await eventsInOneRead(after: cursor, filter: filter, limit: limit)
    }
}

/// SQLite's claim statements: read the jobs in claim order, then mark the ids read as claimed.
///
/// On SQLite the claim's transaction holds the database's only write lock from its first
/// statement, so nothing can change the ready jobs between the read and the UPDATE, and the one
/// statement `UPDATE ... WHERE id IN (SELECT ... LIMIT n) RETURNING ...` that a server needs
/// (there other claims run at once) buys nothing. It costs: SQLite gathers RETURNING rows, whole
/// job rows here, in a temporary table before handing back the first, and returns them in no
/// particular order, so they were sorted again. Read first, the rows come straight off the
/// jobs_claim_order index in claim order, and the UPDATE carries only ids.
extension SQLiteStore {
    static func promoteDue(_ db: SQLiteTransaction, now: Double) throws {
        let promote = try db.statement(sql: promoteDueSQL)
        promote.bind(Promote.now, now)
        try promote.run()
    }

    static func claimReady(
        _ db: SQLiteTransaction, queue: String, limit: Int, workerID: String, leaseUntil: Double
    ) throws -> [ClaimedJob] {
        let read = try db.statement(sql: claimReadSQL)
        read.bind(ClaimRead.queue, queue)
        read.bind(ClaimRead.limit, limit)
        read.bind(ClaimRead.now, SharedSQL.now())
        var claimed: [ClaimedJob] = []
        claimed.reserveCapacity(limit)
        while try read.step() { claimed.append(ClaimedJob(read)) }
        read.reset()
        return try markClaimed(db, claimed, workerID: workerID, leaseUntil: leaseUntil)
    }

    /// Marks jobs just read as ready claimed by `workerID`, by id, many to an UPDATE. Under the
    /// write lock every job read is still ready: all of them are marked.
    static func markClaimed(_ db: SQLiteTransaction, _ jobs: [ClaimedJob], workerID: String, leaseUntil: Double)
        throws -> [ClaimedJob]
    {
        for chunk in jobs.chunks(of: claimIDsPerUpdate) {
            let update = try db.statement(sql: claimMarkSQL[chunk.count])
            update.bind(ClaimMark.worker, workerID)
            update.bind(ClaimMark.leaseUntil, leaseUntil)
            for (offset, job) in chunk.enumerated() { update.bind(ClaimMark.firstID.rawValue + Int32(offset), job.id) }
            try update.run()
            // Anything else is a bug, and throwing rolls the whole claim back.
            guard db.changesCount == chunk.count else {
                throw JobQueueError.storeUnavailable(
                    "claim: \(chunk.count) jobs read as ready but \(db.changesCount) claimed; nothing was claimed, retry"
                )
            }
        }
        return jobs
    }

    private enum Promote: Int32, SQLParameter { case now = 1 }

    private static let promoteDueSQL =
        "UPDATE jobq_jobs SET state = 'ready' WHERE state IN ('scheduled', 'failed') AND run_at <= \(Promote.now)"

    /// Ids per UPDATE at most.
    static let claimIDsPerUpdate = 128

    /// A claim's read: the queue, how many jobs at most, and the time now (for deadlines to start).
    enum ClaimRead: Int32, SQLParameter {
        case queue = 1
        case limit, now
    }

    /// The ready jobs of a queue in claim order, at most a limit, with the attempt the claim
    /// gives them. Its ORDER BY is the column order of the jobs_claim_order index.
    static let claimReadSQL = """
        SELECT \(ClaimedJob.columns(attempt: "attempt + 1")) FROM jobq_jobs
        WHERE state = 'ready' AND queue = \(ClaimRead.queue) AND \(SharedSQL.notExpired(at: "\(ClaimRead.now)"))
            AND \(SharedSQL.executorNotPaused)
        ORDER BY \(SharedSQL.claimOrder) LIMIT \(ClaimRead.limit)
        """

    /// A claim mark's parameters: the worker, the lease's end, then from `firstID` the ids.
    private enum ClaimMark: Int32, SQLParameter {
        case worker = 1
        case leaseUntil, firstID
    }

    /// `claimMarkSQL[n]` claims n jobs by id.
    private static let claimMarkSQL: [String] = (0...claimIDsPerUpdate).map { count in
        let ids = (0..<count).map { "?\(ClaimMark.firstID.rawValue + Int32($0))" }.joined(separator: ", ")
        return """
            UPDATE jobq_jobs SET state = 'running', attempt = attempt + 1, worker_id = \(ClaimMark.worker),
                lease_until = \(ClaimMark.leaseUntil), started_at = NULL
            WHERE id IN (\(ids)) AND state = 'ready'
            """
    }
}
