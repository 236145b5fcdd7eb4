import Foundation
import JobQCore

/// Jobs whose payload a store cannot read back: the one bad row a claim fails on, ended so the
/// rest of its queue goes on.
extension SQLStore {
    /// Ends dead, with an error that names the cause, every unfinished job of `queue` not
    /// running whose payload holds what no store can read back (an escaped NUL or a lone
    /// surrogate: PostgreSQL's `json` accepts them and then fails every read that extracts
    /// them, so a partitioned claim over the queue fails on that row each time). jobq refuses
    /// such payloads at enqueue; these were stored before it did, or by hand. Their dependents,
    /// lanes, batches and workflows follow as for any dead job, in the same transaction.
    /// Returns their ids.
    package func endUnreadableJobs(queue: String) async throws -> [JobID] {
        // The text as stored (PostgreSQL's cast of `json` to text unescapes nothing), checked
        // here rather than by the SQL that fails on it; a page at a time, so that a queue of a
        // million jobs is read in bounded memory.
        var unreadable: [(JobID, String)] = []
        var after: JobID = 0
        while true {
            let page = try await read { [after] db in
                try db.fetchRows(
                    sql: """
                        SELECT id, CAST(payload AS text) AS payload FROM jobq_jobs
                        WHERE queue = ? AND state IN ('waiting', 'scheduled', 'ready', 'failed') AND id > ?
                        ORDER BY id LIMIT 1000
                        """,
                    arguments: [queue, after])
            }
            for row in page {
                let payload: String = row["payload"]
                if let problem = StoredText.problem(inJSON: payload) { unreadable.append((row["id"], problem)) }
            }
            guard page.count == 1000, let last = page.last else { break }
            after = last["id"]
        }
        guard !unreadable.isEmpty else { return [] }
        let now = StoreSQL.now()
        return try await write { [unreadable] db in
            var ended: [JobID] = []
            var finished: [FinishedJob] = []
            let events = db.events(at: now)
            for (id, problem) in unreadable {
                let error =
                    "its payload holds \(problem), which no store can read back (stored before jobq refused such "
                    + "payloads); enqueue it again without it"
                guard
                    let row = try db.fetchRow(
                        sql: """
                            UPDATE jobq_jobs SET state = 'dead', error = \(EndUnreadable.error), finished_at = \(EndUnreadable.finishedAt), lease_until = NULL
                            WHERE id = \(EndUnreadable.id) AND state IN ('waiting', 'scheduled', 'ready', 'failed')
                            RETURNING \(Job.columns)
                            """,
                        arguments: EndUnreadable.arguments([.error: error, .finishedAt: now, .id: id]))
                else { continue }  // claimed or ended meanwhile
                let job = Job(row)
                events.append(
                    .dead(attempt: job.attempt, error: error), job: id, queue: job.queue, executor: job.executor,
                    batch: job.batch, workflow: job.workflowID)
                finished.append(FinishedJob(job))
                ended.append(id)
            }
            try StoreSQL.settle(db, finished, facts: try StoreFacts.read(db))
            return ended
        }
    }
}

/// A job whose row cannot be read, ended dead.
private enum EndUnreadable: Int32, SQLParameter, CaseIterable {
    case error = 1
    case finishedAt, id
}
