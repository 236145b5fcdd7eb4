import Foundation
import JobQCore

/// The records of finished steps, many functions' at once: what a worker's completion batcher
/// writes for the steps its functions finished since its last transaction
/// (``FunctionStore/recordSteps(_:workerID:)``).
///
/// One transaction for a batch instead of one per step: each job's attempt is checked once
/// (the fence, its row locked on a server), the steps go in one multi-row INSERT per
/// ``stepRowsPerInsert`` and their events with the transaction's others.
extension SQLStore {
    package func recordSteps(_ records: [StepRecord], workerID: String) async throws -> Set<JobID> {
        try await recordStepsInTransaction(records, workerID: workerID)
    }

    /// ``FunctionStore/recordSteps(_:workerID:)`` in a write transaction of the store SQL: the
    /// one way on SQLite, and on a server for records its statement does not write.
    package func recordStepsInTransaction(_ records: [StepRecord], workerID: String) async throws -> Set<JobID> {
        guard !records.isEmpty else { return [] }
        // Shared, as one step's record is: only the rows of this worker's running attempts.
        return try await write(.short, audience: .followers, lock: .shared) { db in
            try StoreSQL.recordSteps(db, records, workerID: workerID)
        }
    }
}

extension StoreSQL {
    /// Writes the records of `workerID`'s running attempts inside the caller's transaction (the
    /// store's own, or the application's for a step whose record commits with the
    /// application's rows), and returns the ids of the jobs whose attempt is no longer held:
    /// their records are not written.
    package static func recordSteps(_ db: some SQLTransaction, _ records: [StepRecord], workerID: String) throws
        -> Set<JobID>
    {
        // By attempt: a timed-out run's late step and its job's next attempt can share a batch.
        let attempts = Dictionary(
            records.map { (HeldAttempt($0.job), $0.job) }, uniquingKeysWith: { first, _ in first })
        let held = try heldAttempts(db, Array(attempts.values), workerID: workerID)
        let kept = records.filter { held.contains(HeldAttempt($0.job)) }
        let lost = Set(records.lazy.filter { !held.contains(HeldAttempt($0.job)) }.map(\.job.id))
        try insertSteps(db, kept.map { ($0.job.id, $0.step) })
        for record in kept {
            appendStepEvent(
                db, record.step, job: record.job, now: record.step.finishedAt?.timeIntervalSince1970 ?? now())
        }
        return lost
    }
}

extension StoreSQL {
    /// Of `jobs`, those whose attempt is still `workerID`'s running one: the fence of
    /// ``holdsAttempt(_:job:workerID:)`` for many jobs, one statement per ``attemptsPerFence``,
    /// their rows locked on a server (in id order, so two workers' fences never lock crosswise).
    static func heldAttempts(_ db: some SQLTransaction, _ jobs: [ClaimedJob], workerID: String) throws
        -> Set<HeldAttempt>
    {
        var held: Set<HeldAttempt> = []
        for chunk in jobs.sorted(by: { $0.id < $1.id }).chunks(of: attemptsPerFence) {
            let fence = try db.statement(sql: heldAttemptsSQL[chunk.count][db.dialect])
            fence.bind(HeldAttempts.worker, workerID)
            for (offset, job) in chunk.enumerated() {
                let base = HeldAttempts.firstRow.rawValue + Int32(offset * 2)
                fence.bind(base, job.id)
                fence.bind(base + 1, Int64(job.attempt))
            }
            while try fence.step() { held.insert(HeldAttempt(job: fence.int64(0), attempt: fence.int64(1))) }
            fence.reset()
        }
        return held
    }

    /// A job's attempt, as a fence finds it held.
    struct HeldAttempt: Hashable {
        let job: JobID
        let attempt: Int64

        init(job: JobID, attempt: Int64) {
            self.job = job
            self.attempt = attempt
        }

        init(_ job: ClaimedJob) { self.init(job: job.id, attempt: Int64(job.attempt)) }
    }

    /// Attempts per fence statement at most (2 parameters each, 1 shared).
    static let attemptsPerFence = 64

    /// A fence's parameters: the worker, then from `firstRow` each job's id and attempt.
    private enum HeldAttempts: Int32, SQLParameter {
        case worker = 1
        case firstRow
    }

    /// `heldAttemptsSQL[n]` checks n attempts. The VALUES list's columns are column1 and
    /// column2 in both dialects.
    private static let heldAttemptsSQL: [DialectSQL] = (0...attemptsPerFence).map { count in
        DialectSQL { d in
            """
            SELECT j.id, j.attempt FROM jobq_jobs AS j
            JOIN (VALUES \(d.values(rows: count, from: HeldAttempts.firstRow, types: ["bigint", "integer"]))) AS v
                ON j.id = v.column1
            WHERE \(runningAttempt(of: "\(HeldAttempts.worker)", "j")) AND j.attempt = v.column2
            ORDER BY j.id \(d.forUpdate.isEmpty ? "" : d.forUpdate + " OF j")
            """
        }
    }

    /// Rows per INSERT at most (12 parameters each).
    static let stepRowsPerInsert = 32

    /// Inserts steps at their positions, many to a statement.
    static func insertSteps(_ db: some SQLTransaction, _ steps: [(job: JobID, step: FunctionStep)]) throws {
        for chunk in steps.chunks(of: stepRowsPerInsert) {
            let insert = try db.statement(sql: insertStepsSQL[chunk.count][db.dialect])
            for (offset, (job, step)) in chunk.enumerated() {
                let base = Int32(offset * StepColumn.allCases.count)
                func bind(_ column: StepColumn, _ value: String?) { insert.bind(base + column.rawValue, value) }
                func bind(_ column: StepColumn, _ value: Double?) { insert.bind(base + column.rawValue, value) }
                func bind(_ column: StepColumn, _ value: Int64?) { insert.bind(base + column.rawValue, value) }
                bind(.job, job)
                bind(.position, Int64(step.position))
                bind(.name, step.name)
                bind(.kind, step.kind.rawValue)
                bind(.result, step.resultJSON)
                bind(.children, step.children.isEmpty ? nil : jsonArray(step.children))
                bind(.wakeAt, step.wakeAt?.timeIntervalSince1970)
                bind(.attempt, Int64(step.attempt))
                bind(.startedAt, step.startedAt.timeIntervalSince1970)
                bind(.finishedAt, step.finishedAt?.timeIntervalSince1970)
                bind(.cancelled, Int64(step.cancelled ? 1 : 0))
                bind(.filter, step.filter)
            }
            try insert.run()
        }
    }

    /// A step row's columns, numbered from 1 within its row of parameters.
    private enum StepColumn: Int32, CaseIterable {
        case job = 1
        case position, name, kind, result, children, wakeAt, attempt, startedAt, finishedAt, cancelled, filter

        var type: String {
            switch self {
            case .job: "bigint"
            case .position, .attempt, .cancelled: "integer"
            case .name, .kind, .filter: "text"
            case .result, .children: "json"
            case .wakeAt, .startedAt, .finishedAt: "double precision"
            }
        }
    }

    /// The first parameter of a step INSERT's rows.
    private enum StepRows: Int32, SQLParameter { case first = 1 }

    /// `insertStepsSQL[n]` inserts n steps.
    private static let insertStepsSQL: [DialectSQL] = (0...stepRowsPerInsert).map { count in
        DialectSQL { d in
            """
            INSERT INTO jobq_steps (job_id, position, name, kind, result, children, wake_at, attempt, started_at,
                finished_at, cancelled, filter)
            VALUES \(d.values(rows: count, from: StepRows.first, types: StepColumn.allCases.map(\.type)))
            """
        }
    }
}
