import Foundation

/// Deadlines to start (``JobOptions/expiresAt``): claims pass over a job whose deadline has
/// passed (``StoreSQL/notExpired(at:)``), and this sweep, which every worker's maintenance
/// runs, ends such jobs.
extension SQLStore {
    /// Jobs ended per transaction at most, so that a sweep after a long outage holds the write
    /// lock for short stretches.
    static var expiriesPerTransaction: Int { 500 }

    /// Ends every job whose deadline to start has passed while it waited (for its run time, a
    /// retry, its dependencies or a worker), as `cancelled` with an `expired` event; what
    /// follows from that (dependents by their edge policy, its lane, batch, workflow group or
    /// tree) commits in the same transaction. Returns how many jobs it ended.
    ///
    /// A read first, on the index of jobs with a deadline that have not finished, so that a
    /// store with no overdue job costs one cheap read per sweep.
    package func expireOverdueJobs() async throws -> Int {
        var ended = 0
        while true {
            let now = StoreSQL.now()
            let anyOverdue = try await read(.short) { db in
                try db.fetchOne(Bool.self, sql: "SELECT EXISTS (\(StoreSQL.overdueSQL(limit: 1)))", arguments: [now])
                    ?? false
            }
            guard anyOverdue else { return ended }
            let batch = try await write { db in
                // Read again under the write lock: a job may have started or finished meanwhile.
                let ids = try db.fetchAll(
                    JobID.self, sql: StoreSQL.overdueSQL(limit: Self.expiriesPerTransaction), arguments: [now])
                var events = StoreSQL.PendingEvents(db, now: now)
                let finished = try StoreSQL.end(
                    db, jobs: ids, as: .cancelled,
                    error: "expired: its deadline to start (expiresAt) passed before an attempt started",
                    kind: .expired, events: &events)
                try StoreSQL.settle(db, finished, facts: try StoreFacts.read(db), events: &events)
                return ids.count
            }
            ended += batch
            if batch < Self.expiriesPerTransaction { return ended }
        }
    }
}

extension StoreSQL {
    /// The ids of unfinished jobs whose deadline to start is before `?`, read from the partial
    /// index `jobs_expiring` (its WHERE clause repeated, so that both databases use it).
    static func overdueSQL(limit: Int) -> String {
        """
        SELECT id FROM jobq_jobs
        WHERE expires_at IS NOT NULL AND state IN ('waiting', 'scheduled', 'ready', 'failed') AND expires_at <= ?
        ORDER BY expires_at LIMIT \(limit)
        """
    }
}
