import Foundation
import JobQCore

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
    /// tree) commits in the same transaction. Jobs in `skipping` are left alone.
    ///
    /// A read first, on the index of jobs with a deadline that have not finished, so that a
    /// store with no overdue job costs one cheap read per sweep. A batch the store refuses for
    /// good is ended again one job per transaction, so that one job whose consequences cannot
    /// be written is reported in ``ExpirySweep/refused`` and costs the others nothing; a
    /// transient error (a lock, a lost connection) is thrown for the next sweep to retry.
    package func expireOverdueJobs(skipping: Set<JobID> = []) async throws -> ExpirySweep {
        var sweep = ExpirySweep()
        var skipping = skipping
        while true {
            let now = StoreSQL.now()
            // Read past the skipped ones: they are overdue too, and sort among the others.
            let overdue = try await read(.short) { [skipping] db in
                try db.fetchAll(
                    JobID.self, sql: StoreSQL.overdueSQL(limit: Self.expiriesPerTransaction + skipping.count),
                    arguments: [now]
                ).filter { !skipping.contains($0) }.prefix(Self.expiriesPerTransaction)
            }
            guard !overdue.isEmpty else { return sweep }
            do {
                sweep.ended += try await expire(Array(overdue), at: now)
            } catch let error where StoreErrorKind(of: error) == .permanent {
                for id in overdue {
                    do {
                        sweep.ended += try await expire([id], at: now)
                    } catch let error where StoreErrorKind(of: error) == .permanent {
                        sweep.refused[id] = "\(error)"
                        skipping.insert(id)
                    }
                }
            }
            if overdue.count < Self.expiriesPerTransaction { return sweep }
        }
    }

    /// Ends those of `ids` that are still overdue in one transaction; returns how many.
    private func expire(_ ids: [JobID], at now: Double) async throws -> Int {
        try await write { db in
            // Read again under the write lock: a job may have started or finished meanwhile. On
            // a server, claims run beside this transaction: the rows read are locked (FOR UPDATE),
            // so that a claim committing between this read and the UPDATE cannot have its
            // running job ended as expired (the claim skips locked rows; a row claimed first is
            // read again once its lock is released, found running, and left out).
            let still = Set(
                try db.fetchAll(
                    JobID.self,
                    sql: StoreSQL.overdueSQL(limit: ids.count, among: ids.count)
                        + (db.dialect == .postgres ? " FOR UPDATE" : ""),
                    arguments: SQLArguments([now.sqlValue] + ids.map(\.sqlValue))))
            let ending = ids.filter(still.contains)
            db.stamp(now)
            let finished = try StoreSQL.end(
                db, jobs: ending, as: .cancelled,
                error: "expired: its deadline to start (expiresAt) passed before an attempt started",
                kind: .expired)
            try StoreSQL.settle(db, finished, facts: try StoreFacts.read(db))
            return ending.count
        }
    }
}

extension StoreSQL {
    /// The ids of unfinished jobs whose deadline to start is before the first `?`, read from the
    /// partial index `jobs_expiring` (its WHERE clause repeated, so that both databases use it);
    /// with `among`, only of that many ids bound after it.
    static func overdueSQL(limit: Int, among: Int = 0) -> String {
        let within = among == 0 ? "" : " AND id IN (\(Array(repeating: "?", count: among).joined(separator: ", ")))"
        return """
            SELECT id FROM jobq_jobs
            WHERE expires_at IS NOT NULL AND \(StoreSQL.expirableState) AND expires_at <= ?\(within)
            ORDER BY expires_at LIMIT \(limit)
            """
    }
}
