/// SQLite's claim: read the jobs in claim order, then mark the ids read as claimed.
///
/// On SQLite the claim's transaction holds the database's only write lock from its first
/// statement, so nothing can change the ready jobs between the read and the UPDATE, and the one
/// statement `UPDATE ... WHERE id IN (SELECT ... LIMIT n) RETURNING ...` that a server needs
/// (there other claims run at once) buys nothing. It costs: SQLite gathers RETURNING rows, whole
/// job rows here, in a temporary table before handing back the first, and returns them in no
/// particular order, so they were sorted again. Read first, the rows come straight off the
/// jobs_claim_order index in claim order, and the UPDATE carries only ids.
extension StoreSQL {
    /// Ids per UPDATE at most.
    static let claimIDsPerUpdate = 128

    /// Claims up to `limit` ready jobs of `queue` for `workerID`, in claim order (priority, run
    /// time, id). Only inside a write transaction on SQLite.
    static func claimReadingFirst(
        _ db: some SQLTransaction, queue: String, limit: Int, workerID: String, leaseUntil: Double
    ) throws -> [ClaimedJob] {
        let read = try db.statement(sql: claimReadSQL)
        read.bind(1, queue)
        read.bind(2, limit)
        var claimed: [ClaimedJob] = []
        claimed.reserveCapacity(limit)
        while try read.step() { claimed.append(ClaimedJob(read)) }
        read.reset()
        for chunk in claimed.chunks(of: claimIDsPerUpdate) {
            let update = try db.statement(sql: claimMarkSQL[chunk.count])
            update.bind(1, workerID)
            update.bind(2, leaseUntil)
            for (offset, job) in chunk.enumerated() { update.bind(Int32(3 + offset), job.id) }
            try update.run()
            // Under the write lock every job read is still ready; anything else is a bug, and
            // throwing rolls the whole claim back.
            guard db.changesCount == chunk.count else {
                throw JobQueueError.storeUnavailable(
                    "claim: \(chunk.count) jobs read as ready but \(db.changesCount) claimed; nothing was claimed, retry"
                )
            }
        }
        return claimed
    }

    /// The ready jobs of ?1 in claim order, at most ?2, with the attempt the claim gives them.
    /// Its ORDER BY is the column order of the jobs_claim_order index.
    static let claimReadSQL = """
        SELECT \(ClaimedJob.columns(attempt: "attempt + 1")) FROM jobs WHERE state = 'ready' AND queue = ?1
        ORDER BY priority DESC, run_at, id LIMIT ?2
        """

    /// `claimMarkSQL[n]` claims n jobs by id: ?1 the worker, ?2 the lease's end, then the ids.
    static let claimMarkSQL: [String] = (0...claimIDsPerUpdate).map { count in
        """
        UPDATE jobs SET state = 'running', attempt = attempt + 1, worker_id = ?1, lease_until = ?2, started_at = NULL
        WHERE id IN (\((0..<count).map { "?\(3 + $0)" }.joined(separator: ", "))) AND state = 'ready'
        """
    }
}
