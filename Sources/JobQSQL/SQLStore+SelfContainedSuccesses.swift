import Foundation
import JobQCore

/// Successes that change nothing but their own row and event, recorded many to a statement.
///
/// Most of what a busy worker records is a success of a job that is in no batch, group or
/// lane, writes nothing to a workflow's context, and has no dependents or tracking sets to
/// tell: a drain is made of them. One UPDATE per job opened the jobs table's cursors and its
/// indexes' once per job; one UPDATE per 64 jobs (their ids, attempts, results and start marks
/// joined in as a VALUES list) does the same row work with the statement's setup shared.
/// Each row keeps the worker's fence: only this worker's running attempt is changed, and the
/// ids the UPDATE returns are the ones the fence accepted.
extension SharedSQL {
    /// A success ``record(_:job:outcome:fence:facts:events:reason:start:)`` would record with
    /// its own row and event alone.
    package struct SelfContainedSuccess {
        let job: ClaimedJob
        let resultJSON: String
        /// The job's start mark when it is written in the same transaction (see `record`).
        let start: ClaimedJob?

        /// `nil` when the outcome is not a success or its recording has consequences.
        /// `hasDependents`: some job waits for this one (read in the same transaction; only
        /// exclusive writes add dependencies, so it stays true until commit).
        init?(job: ClaimedJob, outcome: AttemptOutcome, start: ClaimedJob?, facts: StoreFacts, hasDependents: Bool) {
            guard let resultJSON = Self.result(job: job, outcome: outcome), !hasDependents, !facts.trackingMembers
            else { return nil }
            self.job = job
            self.resultJSON = resultJSON
            self.start = start
        }

        /// The result of a success that is self-contained unless the store says otherwise (the job has
        /// dependents, or tracking sets have members): one that is no member of a batch, group
        /// or lane and writes nothing to a workflow's context. Nil for any other outcome.
        package static func result(job: ClaimedJob, outcome: AttemptOutcome) -> String? {
            guard case .succeeded(let resultJSON, let writes) = outcome, writes.isEmpty || job.workflowID == nil,
                !job.isMember
            else { return nil }
            return resultJSON
        }
    }

    /// Of these jobs, those some job waits for: looked up only where the store has dependencies
    /// at all, so that a store using workflows still records the successes of its other jobs as
    /// self-contained ones.
    static func jobsWithDependents(_ db: some SQLTransaction, _ ids: [JobID], facts: StoreFacts) throws -> Set<JobID> {
        guard facts.dependencies, !ids.isEmpty else { return [] }
        return try Set(
            db.fetchAll(
                JobID.self,
                sql: """
                    SELECT DISTINCT depends_on FROM jobq_dependencies
                    WHERE \(db.dialect.integer("depends_on", in: "?"))
                    """,
                arguments: [jsonArray(ids.sorted())]))
    }

    /// Rows per UPDATE at most (4 parameters each, 2 shared).
    static let selfContainedSuccessesPerUpdate = 64

    /// Records `successes` of this worker's attempts, each with its `started` event (when it
    /// brings its start mark) and its `succeeded` event, in their order. Returns the ids the
    /// fence refused (cancelled or taken over meanwhile): nothing of theirs is written.
    static func recordSelfContainedSuccesses(
        _ db: some SQLTransaction, _ successes: [SelfContainedSuccess], workerID: String, events: inout PendingEvents
    ) throws -> Set<JobID> {
        var accepted: Set<JobID> = []
        accepted.reserveCapacity(successes.count)
        // In id order: two writes that lock the same rows lock them in the same order.
        for chunk in successes.sorted(by: { $0.job.id < $1.job.id }).chunks(of: selfContainedSuccessesPerUpdate) {
            let rows = paddedRowCount(chunk.count)
            let update = try db.statement(sql: selfContainedSuccessSQL[rows][db.dialect])
            update.bind(SuccessBatch.now, events.now)
            update.bind(SuccessBatch.worker, workerID)
            for offset in 0..<rows {
                let base = SuccessBatch.firstRow.rawValue + Int32(4 * offset)
                let success = offset < chunk.count ? chunk[chunk.startIndex + offset] : nil
                update.bind(base, success?.job.id)
                update.bind(base + 1, success.map { Int64($0.job.attempt) })
                update.bind(base + 2, success?.resultJSON)
                update.bind(base + 3, success.flatMap { success in success.start.map { $0.startTime ?? events.now } })
            }
            while try update.step() { accepted.insert(update.int64(0)) }
            update.reset()
        }
        let alreadyRecorded =
            accepted.count == successes.count
            ? [] : try recordedEarlier(db, successes.filter { !accepted.contains($0.job.id) }, workerID: workerID)
        var refused: Set<JobID> = []
        for success in successes {
            let job = success.job
            guard accepted.contains(job.id) else {
                if !alreadyRecorded.contains(job.id) { refused.insert(job.id) }
                continue
            }
            if let start = success.start { events.append(startedOf: start, workerID: workerID) }
            var data = JSONObjectBuilder()
            data.add("attempt", int: job.attempt)
            data.add("result", raw: success.resultJSON)
            events.append(
                job: job.id, kind: .succeeded, queue: job.queue, executor: job.executor, batch: job.batch,
                data: data.text,
                workflow: job.workflowID)
        }
        return refused
    }

    /// Of successes the fence refused, those this worker already recorded, attempt for attempt:
    /// a write tried again after its first try committed (its answer lost with the connection,
    /// or, on a server, the exclusive part of the same batch failing after this part
    /// committed). They are neither refused nor written twice.
    private static func recordedEarlier(
        _ db: some SQLTransaction, _ successes: [SelfContainedSuccess], workerID: String
    )
        throws -> Set<JobID>
    {
        let attempts = Dictionary(
            successes.map { ($0.job.id, $0.job.attempt) }, uniquingKeysWith: { first, _ in first })
        let rows = try db.fetchRows(
            sql: """
                SELECT id, attempt FROM jobq_jobs WHERE \(db.dialect.integer("id", in: "?"))
                AND state = 'succeeded' AND worker_id = ?
                """,
            arguments: [jsonArray(attempts.keys.sorted()), workerID])
        return Set(
            rows.compactMap { row in
                let id: JobID = row["id"]
                let attempt: Int = row["attempt"]
                return attempts[id] == attempt ? id : nil
            })
    }

    /// The parameters of a batch of successes: the time, the worker, then from `firstRow` each
    /// job's id, attempt, result and start time.
    enum SuccessBatch: Int32, SQLParameter {
        case now = 1
        case worker, firstRow
    }

    /// `selfContainedSuccessSQL[n]` records n successes (a start time is NULL when the start is
    /// already written; all NULL in the rows that pad a batch to `paddedRowCount`). The VALUES
    /// list's columns are column1...column4 in both dialects; PostgreSQL needs their types.
    static let selfContainedSuccessSQL: [DialectSQL] = (0...selfContainedSuccessesPerUpdate).map { count in
        DialectSQL { d in
            typealias P = SuccessBatch
            let rows = d.values(rows: count, from: P.firstRow, types: ["bigint", "integer", "json", "double precision"])
            return """
                UPDATE jobq_jobs SET state = 'succeeded', result = v.column3, error = NULL, finished_at = \(P.now),
                    lease_until = NULL, started_at = COALESCE(v.column4, jobq_jobs.started_at)
                FROM (VALUES \(rows)) AS v
                WHERE jobq_jobs.id = v.column1 AND \(runningAttempt(of: "\(P.worker)", "jobq_jobs")) AND jobq_jobs.attempt = v.column2
                RETURNING jobq_jobs.id
                """
        }
    }
}
