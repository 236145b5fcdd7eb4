import Foundation
import JobQCore

/// Durable functions on every SQL store: the record of a function's steps and the signals sent
/// to jobs (``FunctionStore``). A running function's writes are fenced on its attempt like its
/// outcome is; a signal and the wake-up of the function parked for it are one transaction.
///
/// On a server, a signal and a function parking for the same name can commit at the same time:
/// each locks the job's row first (a signal by `SELECT ... FOR UPDATE`, a park by its UPDATE),
/// and each reads the other's rows in a statement of its own after that lock, so whichever
/// commits second sees the first (``StoreSQL/wakeIfSignalled(_:job:now:)``).
extension SQLStore {
    package func functionRecord(of job: JobID) async throws -> FunctionRecord {
        try await read(.short) { db in
            let steps = try db.fetchRows(
                sql: """
                    SELECT position, name, kind, result, children, wake_at, attempt, started_at, finished_at,
                        cancelled, filter
                    FROM jobq_steps WHERE job_id = ? ORDER BY position
                    """,
                arguments: [job]
            ).map(StoreSQL.functionStep)
            let cancel = try db.fetchOne(
                Double.self, sql: "SELECT cancel_requested FROM jobq_jobs WHERE id = ?", arguments: [job])
            return FunctionRecord(steps: steps, cancelRequested: cancel.map(Date.init(timeIntervalSince1970:)))
        }
    }

    package func recordStep(_ step: FunctionStep, job: ClaimedJob, workerID: String) async throws -> StepWrite {
        // A shared write: it changes only the rows of its own running attempt (the job's row,
        // locked first, and the step it inserts), so functions on a server record steps side by
        // side; a cancel or a reclaim is exclusive and runs before or after it.
        try await write(.short, audience: .followers, lock: .shared) { db in
            guard let hold = try StoreSQL.holdsAttempt(db, job: job, workerID: workerID) else { return .lost }
            if hold.cancelRequested, step.kind != .step { return .cancelled }
            try StoreSQL.insertStep(db, step, job: job.id)
            StoreSQL.appendStepEvent(
                db, step, job: job, now: step.finishedAt?.timeIntervalSince1970 ?? StoreSQL.now())
            return .recorded
        }
    }

    package func takeSignal(for step: FunctionStep, job: ClaimedJob, workerID: String, now: Double) async throws
        -> SignalTake
    {
        try await takeSignalInTransaction(for: step, job: job, workerID: workerID, now: now)
    }

    /// ``FunctionStore/takeSignal(for:job:workerID:now:)`` in a write transaction of the shared
    /// SQL: the one way on SQLite, and on a server for what its statement does not take.
    package func takeSignalInTransaction(for step: FunctionStep, job: ClaimedJob, workerID: String, now: Double)
        async throws -> SignalTake
    {
        try await write(.short, audience: .followers) { db in
            guard let hold = try StoreSQL.holdsAttempt(db, job: job, workerID: workerID) else { return .lost }
            if hold.cancelRequested { return .cancelled }
            let recorded = try db.fetchRow(
                sql: "SELECT result, finished_at FROM jobq_steps WHERE job_id = ? AND position = ?",
                arguments: [job.id, step.position])
            if recorded == nil { try StoreSQL.insertStep(db, step, job: job.id) }
            if step.kind == .event {
                return try StoreSQL.takeEvent(db, step, recorded: recorded, job: job, now: now)
            }
            let signal = try db.fetchRow(
                sql: """
                    SELECT id, payload FROM jobq_signals WHERE job_id = ? AND name = ? AND position IS NULL
                    ORDER BY id LIMIT 1
                    """,
                arguments: [job.id, step.name])
            var finished = step
            finished.finishedAt = Date(timeIntervalSince1970: now)
            let take: SignalTake
            if let signal {
                let payload: String? = signal["payload"]
                try db.execute(
                    sql: "UPDATE jobq_signals SET position = ?, taken_at = ? WHERE id = ?",
                    arguments: [step.position, now, signal["id"] as Int64])
                // `null` when sent without one: a recorded result of NULL means the wait timed out.
                finished.resultJSON = payload ?? "null"
                take = .taken(payloadJSON: payload)
            } else if let deadline = step.wakeAt, deadline.timeIntervalSince1970 <= now {
                finished.resultJSON = nil
                take = .timedOut
            } else {
                return .none
            }
            try db.execute(
                sql: "UPDATE jobq_steps SET result = ?, finished_at = ? WHERE job_id = ? AND position = ?",
                arguments: [finished.resultJSON, now, job.id, step.position])
            StoreSQL.appendStepEvent(db, finished, job: job, now: now)
            return take
        }
    }

    package func cancelPoint(_ step: FunctionStep, job: ClaimedJob, workerID: String) async throws -> Bool {
        let now = StoreSQL.now()
        return try await write(.short, audience: .followers) { db in
            guard try StoreSQL.holdsAttempt(db, job: job, workerID: workerID) != nil else { return false }
            var ended = step
            ended.cancelled = true
            ended.finishedAt = ended.finishedAt ?? Date(timeIntervalSince1970: now)
            try db.execute(
                sql: """
                    UPDATE jobq_steps SET cancelled = 1, finished_at = COALESCE(finished_at, ?)
                    WHERE job_id = ? AND position = ?
                    """,
                arguments: [now, job.id, step.position])
            if db.changesCount == 0 { try StoreSQL.insertStep(db, ended, job: job.id) }
            StoreSQL.appendStepEvent(db, ended, job: job, now: now)
            return true
        }
    }

    package func startCall(_ children: [JobRequest], step: FunctionStep, job: ClaimedJob, workerID: String)
        async throws -> CallProgress
    {
        try StoreSQL.validate(children)
        let now = StoreSQL.now()
        return try await write(.short) { db in
            guard let hold = try StoreSQL.holdsAttempt(db, job: job, workerID: workerID) else { return .lost }
            if hold.cancelRequested { return .cancelled }
            var step = step
            step.children = try StoreSQL.enqueue(children, db: db, now: now).map(\.job.id)
            try StoreSQL.insertStep(db, step, job: job.id)
            StoreSQL.appendStepEvent(db, step, job: job, now: now)
            return try StoreSQL.finishOrParkCall(db, step, job: job, workerID: workerID, now: now)
        }
    }

    package func resumeCall(_ step: FunctionStep, job: ClaimedJob, workerID: String) async throws -> CallProgress {
        let now = StoreSQL.now()
        return try await write(.short) { db in
            guard let hold = try StoreSQL.holdsAttempt(db, job: job, workerID: workerID) else { return .lost }
            if hold.cancelRequested { return .cancelled }
            return try StoreSQL.finishOrParkCall(db, step, job: job, workerID: workerID, now: now)
        }
    }

    package func sendSignal(to id: JobID, name: String, payloadJSON: String?) async throws -> SignalReceipt {
        let now = StoreSQL.now()
        return try await write(.short) { db in
            guard
                let row = try db.fetchRow(
                    sql:
                        "SELECT state, queue, executor, batch, workflow_id FROM jobq_jobs WHERE id = ? \(db.dialect.forUpdate)",
                    arguments: [id])
            else {
                throw JobQueueError.notFound("no job with id \(id); list jobs with `jobq list`")
            }
            let state = JobState(rawValue: row["state"] as String)
            if let state, state.isFinal {
                throw JobQueueError.invalidState(
                    "job \(id) is \(state.rawValue): a signal can reach only a job that has not finished; nothing was sent"
                )
            }
            let signal =
                try db.fetchOne(
                    Int64.self,
                    sql: "INSERT INTO jobq_signals (job_id, name, payload, sent_at) VALUES (?, ?, ?, ?) RETURNING id",
                    arguments: [id, name, payloadJSON, now]) ?? 0
            let woke = try StoreSQL.wakeIfSignalled(db, job: id, now: now)
            let queue: String = row["queue"]
            let executor: String = row["executor"]
            let batch: String? = row["batch"]
            let workflow: WorkflowID? = row["workflow_id"]
            StoreSQL.appendEvent(
                db, .signal(name: name, signal: signal, woke: woke), job: id, queue: queue, executor: executor,
                batch: batch, now: now, workflow: workflow)
            return SignalReceipt(id: signal, wokeJob: woke)
        }
    }
}

extension StoreSQL {
    /// A running function's hold on its attempt.
    struct AttemptHold {
        /// Cancelling the function was asked for: its sleeps, waits and calls end the run.
        var cancelRequested: Bool
    }

    /// `job`'s attempt when it is still `workerID`'s running one, nil otherwise: the fence of
    /// every write a running function makes. On a server the row is locked until the
    /// transaction ends, so no cancel or reclaim slips between this and the write.
    static func holdsAttempt(_ db: some SQLTransaction, job: ClaimedJob, workerID: String) throws -> AttemptHold? {
        try db.fetchRow(
            sql: """
                SELECT cancel_requested FROM jobq_jobs WHERE id = ? AND \(runningAttempt(of: "?")) AND attempt = ?
                \(db.dialect.forUpdate)
                """,
            arguments: [job.id, workerID, job.attempt]
        ).map { AttemptHold(cancelRequested: ($0["cancel_requested"] as Double?) != nil) }
    }

    static func insertStep(_ db: some SQLTransaction, _ step: FunctionStep, job: JobID) throws {
        try insertSteps(db, [(job, step)])
    }

    /// Makes a job parked for a signal or an event ready when a signal of that name waits for
    /// it, or an emit ended its wait for the event (the last position it reached); whether it
    /// did. Called after the job's row is locked, by the signal's or the emit's transaction and
    /// by the park's.
    static func wakeIfSignalled(_ db: some SQLTransaction, job: JobID, now: Double) throws -> Bool {
        try db.execute(
            sql: """
                UPDATE jobq_jobs SET state = 'ready', run_at = ?
                WHERE id = ? AND state = 'scheduled' AND awaiting IS NOT NULL AND (
                    EXISTS (
                        SELECT 1 FROM jobq_signals s
                        WHERE s.job_id = jobq_jobs.id AND s.name = jobq_jobs.awaiting AND s.position IS NULL)
                    OR EXISTS (
                        SELECT 1 FROM jobq_steps w
                        WHERE w.job_id = jobq_jobs.id AND w.kind = 'event' AND w.finished_at IS NOT NULL
                            AND w.position = (SELECT MAX(position) FROM jobq_steps l WHERE l.job_id = jobq_jobs.id)))
                """,
            arguments: [now, job])
        return db.changesCount > 0
    }

    /// A function's wait for an event, in its own fenced transaction: the payload an emit ended
    /// it with, or past its deadline the end of the wait with nothing. An emit and the deadline
    /// race for the open row; whichever ends it first is what the wait returns.
    static func takeEvent(
        _ db: some SQLTransaction, _ step: FunctionStep, recorded: SQLRow?, job: ClaimedJob, now: Double
    ) throws -> SignalTake {
        if let recorded, (recorded["finished_at"] as Double?) != nil {
            return .taken(payloadJSON: recorded["result"])
        }
        guard let deadline = step.wakeAt, deadline.timeIntervalSince1970 <= now else { return .none }
        try db.execute(
            sql: """
                UPDATE jobq_steps SET finished_at = ? WHERE job_id = ? AND position = ? AND finished_at IS NULL
                """,
            arguments: [now, job.id, step.position])
        var ended = step
        ended.finishedAt = Date(timeIntervalSince1970: now)
        ended.resultJSON = nil
        appendStepEvent(db, ended, job: job, now: now)
        return .timedOut
    }

    /// What an emit does for the durable functions waiting for its event, in the emit's
    /// transaction: each open wait whose filter matches the payload ends with it, and a function
    /// parked at it is made ready. The functions it reached, by job id.
    ///
    /// A job's row is locked before its wait's row (as a running function locks them), in
    /// id order, so that two emits and a function's own writes queue instead of deadlocking.
    static func deliverEvent(_ db: some SQLTransaction, event: String, payloadJSON: String, now: Double) throws
        -> [JobID]
    {
        let open = try db.fetchRows(
            sql: """
                SELECT job_id, position, name, kind, result, children, wake_at, attempt, started_at, finished_at,
                    cancelled, filter
                FROM jobq_steps
                WHERE kind = 'event' AND name = ? AND finished_at IS NULL AND cancelled = 0
                ORDER BY job_id
                """,
            arguments: [event])
        guard !open.isEmpty else { return [] }
        var matches: [String: Bool] = [:]
        var reached: [JobID] = []
        for row in open {
            var wait = functionStep(row)
            if let filter = wait.filter {
                if matches[filter] == nil { matches[filter] = try payload(payloadJSON, matches: filter, db) }
                guard matches[filter] == true else { continue }
            }
            let id: JobID = row["job_id"]
            guard
                let job = try db.fetchRow(
                    sql: """
                        SELECT queue, executor, batch, workflow_id FROM jobq_jobs WHERE id = ? \(db.dialect.forUpdate)
                        """,
                    arguments: [id])
            else { continue }
            try db.execute(
                sql: """
                    UPDATE jobq_steps SET result = ?, finished_at = ?
                    WHERE job_id = ? AND position = ? AND finished_at IS NULL AND cancelled = 0
                    """,
                arguments: [payloadJSON, now, id, wait.position])
            guard db.changesCount > 0 else { continue }
            _ = try wakeIfSignalled(db, job: id, now: now)
            wait.resultJSON = payloadJSON
            wait.finishedAt = Date(timeIntervalSince1970: now)
            appendEvent(
                db, .step(attempt: wait.attempt, step: wait), job: id, queue: job["queue"], executor: job["executor"],
                batch: job["batch"], now: now, workflow: job["workflow_id"])
            reached.append(id)
        }
        return reached
    }

    /// Whether an emitted payload matches a wait's filter, decided by the store's own SQL for
    /// the filter language, so that it means here what it means in `jobq list --where`. A filter
    /// that no longer reads (it was checked when the wait began) matches nothing.
    private static func payload(_ payloadJSON: String, matches filter: String, _ db: some SQLTransaction) throws
        -> Bool
    {
        guard let parsed = try? JobFilter(filter) else { return false }
        let condition = FilterSQL.condition(parsed, db.dialect, now: now())
        let value = db.dialect == .postgres ? "CAST(? AS json)" : "?"
        return try db.fetchRow(
            sql: "SELECT 1 AS matched FROM (SELECT \(value) AS payload) AS emitted WHERE \(condition.sql)",
            arguments: [payloadJSON] + condition.arguments) != nil
    }

    /// A call whose children all finished records their outcomes with its step; otherwise the
    /// function parks `waiting` on the unfinished ones, as a job waits for its dependencies (an
    /// edge each, policy `ignore`: a child that fails still wakes it, to see the failure). In a
    /// write that runs alone, so that no child finishes between the count and the edges.
    static func finishOrParkCall(
        _ db: some SQLTransaction, _ step: FunctionStep, job: ClaimedJob, workerID: String, now: Double
    ) throws -> CallProgress {
        let list = jsonArray(step.children)
        let rows = try db.fetchRows(
            sql: "SELECT id, state, result, error FROM jobq_jobs WHERE \(db.dialect.integer("id", in: "?"))",
            arguments: [list])
        var byID: [JobID: SQLRow] = [:]
        for row in rows { byID[row["id"]] = row }
        let unfinished = step.children.filter { id in
            byID[id].map { JobState(rawValue: $0["state"] as String)?.isFinal != true } ?? false
        }
        guard unfinished.isEmpty else {
            try db.execute(
                sql: """
                    UPDATE jobq_jobs SET state = 'waiting', unmet = ?, attempt = attempt - 1, run_at = ?, awaiting = NULL,
                        worker_id = NULL, lease_until = NULL
                    WHERE id = ? AND \(runningAttempt(of: "?")) AND attempt = ?
                    """,
                arguments: [unfinished.count, now, job.id, workerID, job.attempt])
            guard db.changesCount > 0 else { return .lost }
            // A call parked again (its job retried by an operator meanwhile) keeps one edge per child.
            try db.execute(
                sql: "DELETE FROM jobq_dependencies WHERE job_id = ? AND \(db.dialect.integer("depends_on", in: "?"))",
                arguments: [job.id, jsonArray(unfinished)])
            try insertEdges(db, job: job.id, on: unfinished.map { (.job($0), "ignore") })
            appendEvent(
                db, .parked(attempt: job.attempt, until: now, awaiting: nil, calls: unfinished), job: job.id,
                queue: job.queue, executor: job.executor, batch: job.batch, now: now, workflow: job.workflowID)
            return .parked
        }
        // Each child's outcome, in the call's order; a child deleted meanwhile says so.
        let outcomes = step.children.map { id -> String in
            var outcome = JSONObjectBuilder()
            outcome.add("job", int: Int(id))
            guard let row = byID[id] else {
                outcome.add("state", string: "deleted")
                outcome.add("error", string: "job \(id) was deleted before the call read its outcome")
                return outcome.text
            }
            let state: String = row["state"]
            outcome.add("state", string: state)
            if state == JobState.succeeded.rawValue {
                outcome.add("result", raw: (row["result"] as String?) ?? "null")
            } else {
                outcome.add("error", string: (row["error"] as String?) ?? "job \(id) was \(state)")
            }
            return outcome.text
        }
        let outcomesJSON = "[" + outcomes.joined(separator: ",") + "]"
        try db.execute(
            sql: "UPDATE jobq_steps SET result = ?, finished_at = ? WHERE job_id = ? AND position = ?",
            arguments: [outcomesJSON, now, job.id, step.position])
        var finished = step
        finished.finishedAt = Date(timeIntervalSince1970: now)
        appendStepEvent(db, finished, job: job, now: now)
        return .finished(outcomesJSON: outcomesJSON)
    }

    /// The event of a function's step, sleep, wait or call: one helper, so that every write of
    /// the record tells it the same way.
    static func appendStepEvent(_ db: some SQLTransaction, _ step: FunctionStep, job: ClaimedJob, now: Double) {
        appendEvent(
            db, .step(attempt: job.attempt, step: step), job: job.id, queue: job.queue, executor: job.executor,
            batch: job.batch, now: now, workflow: job.workflowID)
    }

    static func jobIDs(inJSONArray text: String) -> [JobID] {
        text.split(whereSeparator: { !$0.isNumber && $0 != "-" }).compactMap { JobID($0) }
    }

    package static func functionStep(_ row: SQLRow) -> FunctionStep {
        FunctionStep(
            position: Int(row["position"] as Int64), name: row["name"],
            kind: FunctionStep.Kind(rawValue: row["kind"] as String) ?? .step, resultJSON: row["result"],
            children: (row["children"] as String?).map(jobIDs(inJSONArray:)) ?? [],
            wakeAt: (row["wake_at"] as Double?).map(Date.init(timeIntervalSince1970:)),
            attempt: Int(row["attempt"] as Int64), startedAt: Date(timeIntervalSince1970: row["started_at"]),
            finishedAt: (row["finished_at"] as Double?).map(Date.init(timeIntervalSince1970:)),
            cancelled: (row["cancelled"] as Int64) != 0, filter: row["filter"])
    }
}
