import Foundation
import JobQCore
import JobQSQL

/// A worker's batch of durable-function step records on PostgreSQL: one prepared statement
/// committed on its own, one round trip where the store SQL's transaction
/// (`SQLStore.recordSteps`) takes six (BEGIN, the lock, the fence, the steps, the events,
/// COMMIT) and parses a statement for each batch size.
///
/// The same rules as the store SQL's: the shared write lock first (its `lock` CTE), each job's
/// attempt fenced on this worker and locked (in id order), the steps of held attempts inserted
/// with their `step` events (in the order given), nothing written for the others, which it
/// returns.
extension ServerStore {
    func recordSteps(_ records: [StepRecord], workerID: String) async throws -> Set<JobID> {
        guard !records.isEmpty else { return [] }
        // Only steps (a patch gate is one); anything else a function records has a call of its own.
        guard records.allSatisfy({ $0.step.kind == .step && $0.step.children.isEmpty }) else {
            return try await recordStepsInTransaction(records, workerID: workerID)
        }
        let now = StoreSQL.now()
        var arguments = ServerArguments<StepRows>()
        arguments[.worker] = .text(workerID)
        arguments[.jobs] = .text(ArrayLiteral.integers(records.map(\.job.id)))
        arguments[.attempts] = .text(ArrayLiteral.integers(records.map { Int64($0.job.attempt) }))
        arguments[.positions] = .text(ArrayLiteral.integers(records.map { Int64($0.step.position) }))
        arguments[.names] = .text(ArrayLiteral.texts(records.map(\.step.name)))
        arguments[.results] = .text(ArrayLiteral.texts(records.map(\.step.resultJSON)))
        arguments[.stepAttempts] = .text(ArrayLiteral.integers(records.map { Int64($0.step.attempt) }))
        arguments[.startedAt] = .text(ArrayLiteral.reals(records.map { $0.step.startedAt.timeIntervalSince1970 }))
        arguments[.finishedAt] = .text(
            ArrayLiteral.reals(records.map { $0.step.finishedAt?.timeIntervalSince1970 ?? now }))
        arguments[.events] = .text(
            ArrayLiteral.texts(records.map { EventData.step(attempt: $0.job.attempt, step: $0.step).text }))
        let result = try await server.autocommit(RecordStepRows.self, arguments.values, line: .completions)
        commitObservers.callAll()
        return Set(result.rows.compactMap { SQLRow(names: [], values: $0).optionalInt64(0) })
    }

    /// The statement's parameters: the worker, then one array per column of the records, in
    /// the order given (the job, its attempt; the step's position, name, result, attempt,
    /// start and end; its event's data).
    fileprivate enum StepRows: Int32, ServerParameter {
        case worker = 1
        case jobs, attempts, positions, names, results, stepAttempts, startedAt, finishedAt, events
    }

    fileprivate static let recordStepsSQL = """
        WITH lock AS MATERIALIZED (SELECT \(PostgresServer.lockAndNotify(.shared, .followers))),
        input AS MATERIALIZED (
            SELECT * FROM unnest(
                CAST(\(StepRows.jobs) AS bigint[]), CAST(\(StepRows.attempts) AS integer[]),
                CAST(\(StepRows.positions) AS integer[]), CAST(\(StepRows.names) AS text[]),
                CAST(\(StepRows.results) AS text[]), CAST(\(StepRows.stepAttempts) AS integer[]),
                CAST(\(StepRows.startedAt) AS double precision[]), CAST(\(StepRows.finishedAt) AS double precision[]),
                CAST(\(StepRows.events) AS text[])
            ) WITH ORDINALITY AS i(job_id, attempt, position, name, result, step_attempt, started_at, finished_at,
                event, n)
        ),
        held AS MATERIALIZED (
            SELECT j.id, j.attempt, j.queue, j.executor, j.batch, j.workflow_id FROM jobq_jobs AS j
            WHERE j.id IN (SELECT job_id FROM input) AND (SELECT true FROM lock)
                AND \(StoreSQL.runningAttempt(of: "\(StepRows.worker)", "j"))
            ORDER BY j.id FOR UPDATE
        ),
        kept AS MATERIALIZED (
            SELECT input.*, held.queue, held.executor, held.batch, held.workflow_id
            FROM input JOIN held ON held.id = input.job_id AND held.attempt = input.attempt
        ),
        steps AS (
            INSERT INTO jobq_steps (job_id, position, name, kind, result, attempt, started_at, finished_at)
            SELECT job_id, position, name, 'step', CAST(result AS json), step_attempt, started_at, finished_at
            FROM kept ORDER BY n
        ),
        events AS (
            INSERT INTO jobq_events (job_id, kind, queue, executor, batch, data, created_at, workflow_id)
            SELECT job_id, 'step', queue, executor, batch, CAST(event AS json), finished_at, workflow_id
            FROM kept ORDER BY n
        )
        SELECT DISTINCT job_id FROM input
        WHERE NOT EXISTS (SELECT 1 FROM kept WHERE kept.job_id = input.job_id AND kept.attempt = input.attempt)
        """
}

private enum RecordStepRows: StatementText {
    static let sql = ServerStore.recordStepsSQL
}
