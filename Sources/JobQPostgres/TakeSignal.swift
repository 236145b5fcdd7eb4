import Foundation
import JobQCore
import JobQSQL

/// A durable function's wait for a signal on PostgreSQL: one prepared statement committed on its
/// own, one round trip where the store SQL's transaction (`SQLStore.takeSignal`) takes nine
/// (BEGIN, the lock, the fence, the record, the signal, its update, the step's, the event,
/// COMMIT). It is what a signalled function does first when it runs again, so it is most of the
/// time from a signal to its function going on.
///
/// The same rules as the store SQL's: the exclusive write lock first (as every signal's
/// transaction takes it, so a signal sent meanwhile is either seen here or sees the function
/// parked), the attempt fenced on this worker and locked; a cancel asked for ends the wait;
/// otherwise the oldest untaken signal of the name is taken at the wait's position, or the
/// deadline has passed, and the wait's record is finished with its `step` event; or neither,
/// and the wait is recorded unfinished (when it was not yet) for the park that follows. A wait
/// for an event is the store SQL's.
extension ServerStore {
    func takeSignal(for step: FunctionStep, job: ClaimedJob, workerID: String, now: Double) async throws
        -> SignalTake
    {
        guard step.kind == .signal else {
            return try await takeSignalInTransaction(for: step, job: job, workerID: workerID, now: now)
        }
        var finished = step
        finished.finishedAt = Date(timeIntervalSince1970: now)
        // The taken payload goes where the marker is; a timed-out wait's event has none.
        finished.resultJSON = Self.payloadMarker
        let takenEvent = EventData.step(attempt: job.attempt, step: finished).text
        finished.resultJSON = nil
        let timedOutEvent = EventData.step(attempt: job.attempt, step: finished).text
        var arguments = ServerArguments<Take>()
        arguments[.worker] = .text(workerID)
        arguments[.job] = .integer(job.id)
        arguments[.attempt] = .integer(Int64(job.attempt))
        arguments[.position] = .integer(Int64(step.position))
        arguments[.name] = .text(step.name)
        arguments[.wakeAt] = step.wakeAt.map { .real($0.timeIntervalSince1970) } ?? .null
        arguments[.now] = .real(now)
        arguments[.stepAttempt] = .integer(Int64(step.attempt))
        arguments[.startedAt] = .real(step.startedAt.timeIntervalSince1970)
        arguments[.takenEvent] = .text(takenEvent)
        arguments[.timedOutEvent] = .text(timedOutEvent)
        let result = try await server.autocommit(TakeSignalStatement.self, arguments.values, line: .claims)
        guard let values = result.rows.first else { return .lost }
        let row = SQLRow(names: [], values: values)
        guard row.int64(0) != 0 else { return .lost }
        if row.int64(1) != 0 { return .cancelled }
        let take: SignalTake =
            switch row.optionalString(2) {
            case "taken": .taken(payloadJSON: row.optionalString(3))
            case "timedOut": .timedOut
            default: SignalTake.none
            }
        if take != SignalTake.none { commitObservers.callAll() }
        return take
    }

    /// Stands for the taken signal's payload in the event text made before the statement knows it.
    fileprivate static let payloadMarker = "__jobq_signal_payload__"

    /// The statement's parameters: the worker, the job and its attempt; the wait's position,
    /// name and deadline; now; the wait's record (its attempt and start); the event of a taken
    /// signal (with ``payloadMarker``) and of a timed-out wait.
    fileprivate enum Take: Int32, ServerParameter {
        case worker = 1
        case job, attempt, position, name, wakeAt, now, stepAttempt, startedAt, takenEvent, timedOutEvent
    }

    fileprivate static let takeSignalSQL = """
        WITH lock AS MATERIALIZED (SELECT \(PostgresServer.lockAndNotify(.exclusive, .followers))),
        held AS MATERIALIZED (
            SELECT j.cancel_requested, j.queue, j.executor, j.batch, j.workflow_id FROM jobq_jobs AS j
            WHERE j.id = CAST(\(Take.job) AS bigint) AND (SELECT true FROM lock)
                AND \(StoreSQL.runningAttempt(of: "\(Take.worker)", "j")) AND j.attempt = CAST(\(Take.attempt) AS integer)
            FOR UPDATE
        ),
        go AS MATERIALIZED (SELECT * FROM held WHERE cancel_requested IS NULL),
        recorded AS MATERIALIZED (
            SELECT 1 AS found FROM jobq_steps
            WHERE job_id = CAST(\(Take.job) AS bigint) AND position = CAST(\(Take.position) AS integer)
                AND EXISTS (SELECT 1 FROM go)
        ),
        signal AS MATERIALIZED (
            SELECT s.id, CAST(s.payload AS text) AS payload FROM jobq_signals AS s
            WHERE s.job_id = CAST(\(Take.job) AS bigint) AND s.name = \(Take.name) AND s.position IS NULL
                AND EXISTS (SELECT 1 FROM go)
            ORDER BY s.id LIMIT 1 FOR UPDATE
        ),
        outcome AS MATERIALIZED (
            SELECT CASE
                    WHEN EXISTS (SELECT 1 FROM signal) THEN 'taken'
                    WHEN CAST(\(Take.wakeAt) AS double precision) <= CAST(\(Take.now) AS double precision) THEN 'timedOut'
                    ELSE 'none'
                END AS take,
                (SELECT payload FROM signal) AS payload
            FROM go
        ),
        finished AS MATERIALIZED (
            -- A signal sent without a payload is recorded as JSON null; a timed-out wait as NULL.
            SELECT take, CASE WHEN take = 'taken' THEN COALESCE(payload, 'null') END AS result
            FROM outcome WHERE take <> 'none'
        ),
        taken AS (
            UPDATE jobq_signals SET position = CAST(\(Take.position) AS integer),
                taken_at = CAST(\(Take.now) AS double precision)
            WHERE id = (SELECT id FROM signal)
        ),
        finish_recorded AS (
            UPDATE jobq_steps SET result = CAST((SELECT result FROM finished) AS json),
                finished_at = CAST(\(Take.now) AS double precision)
            WHERE job_id = CAST(\(Take.job) AS bigint) AND position = CAST(\(Take.position) AS integer)
                AND EXISTS (SELECT 1 FROM recorded) AND EXISTS (SELECT 1 FROM finished)
        ),
        record AS (
            INSERT INTO jobq_steps (job_id, position, name, kind, result, wake_at, attempt, started_at, finished_at, cancelled)
            SELECT CAST(\(Take.job) AS bigint), CAST(\(Take.position) AS integer), \(Take.name), 'signal',
                CAST(f.result AS json), CAST(\(Take.wakeAt) AS double precision), CAST(\(Take.stepAttempt) AS integer),
                CAST(\(Take.startedAt) AS double precision),
                CASE WHEN f.take IS NOT NULL THEN CAST(\(Take.now) AS double precision) END, 0
            FROM go LEFT JOIN finished AS f ON true
            WHERE NOT EXISTS (SELECT 1 FROM recorded)
        ),
        event AS (
            INSERT INTO jobq_events (job_id, kind, queue, executor, batch, data, created_at, workflow_id)
            SELECT CAST(\(Take.job) AS bigint), 'step', go.queue, go.executor, go.batch,
                CAST(CASE WHEN f.take = 'taken' THEN replace(\(Take.takenEvent), '\(payloadMarker)', f.result)
                    ELSE \(Take.timedOutEvent) END AS json),
                CAST(\(Take.now) AS double precision), go.workflow_id
            FROM go JOIN finished AS f ON true
        )
        SELECT CAST((SELECT count(*) FROM held) AS bigint),
            CAST(EXISTS (SELECT 1 FROM held WHERE cancel_requested IS NOT NULL) AS integer),
            (SELECT take FROM outcome), (SELECT payload FROM outcome)
        """
}

private enum TakeSignalStatement: StatementText {
    static let sql = ServerStore.takeSignalSQL
}
