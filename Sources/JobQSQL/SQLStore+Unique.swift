import Foundation
import JobQCore

/// Unique jobs: the partial unique index on `jobs.unique_hold` makes a second holder of a key
/// impossible; this finds the holder, and releases a hold whose time is up.
extension StoreSQL {
    /// The job that holds `key` at `now`, or nil when no job does any more. A job whose hold
    /// expired (it finished in a state or past a period its rule does not keep) is released
    /// here, inside the caller's transaction, so the caller's insert or retry may take the key.
    static func takeUniqueKey(_ db: some SQLTransaction, _ key: String, now: Double) throws -> Job? {
        let row = try db.statement(
            sql: "SELECT \(Job.columns), unique_states, unique_for FROM jobq_jobs WHERE unique_hold = ?")
        row.bind(1, key)
        defer { row.reset() }
        guard try row.step() else { return nil }
        let holder = Job(row)
        let extra = Job.columnCount
        if UniqueKey.holds(
            state: holder.state, finishedAt: holder.finishedAt?.timeIntervalSince1970, bits: row.int(extra),
            period: row.optionalDouble(extra + 1), now: now)
        {
            return holder
        }
        row.reset()
        try db.execute(sql: "UPDATE jobq_jobs SET unique_hold = NULL WHERE id = ?", arguments: [holder.id])
        return nil
    }
}
