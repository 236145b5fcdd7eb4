import Foundation
import JobQCore

/// Lanes: a row per lane pointing at its tail job; each appended job depends on the tail, so a
/// lane runs one job at a time in append order through the same edges as everything else.
extension SQLStore {
    /// Lets a halted lane go on: the job after the one that failed runs next.
    package func resumeLane(_ name: String) async throws -> LaneStatus {
        let now = StoreSQL.now()
        return try await write { db in
            guard
                let halted = try db.fetchRow(
                    sql: "SELECT halted_job_id FROM jobq_lanes WHERE name = ?", arguments: [name])
            else {
                throw StoreSQL.noLane(name)
            }
            guard let failedID = halted["halted_job_id"] as JobID? else {
                throw JobQueueError.invalidState("lane '\(name)' is not halted; nothing to resume")
            }
            try db.execute(sql: "UPDATE jobq_lanes SET halted_job_id = NULL WHERE name = ?", arguments: [name])
            let failed = try StoreSQL.existingJob(db, failedID)
            let events = db.events(at: now)
            events.append(
                .lane(name: name, change: .resumed, job: failedID), job: failedID, queue: failed.queue,
                executor: failed.executor, batch: failed.batch)
            var work: [FinishedJob] = []
            try StoreSQL.resolveDependents(
                of: .job(failedID), db, succeeded: false, failure: FinishedJob(failed), work: &work)
            try StoreSQL.settle(db, work, facts: try StoreFacts.read(db))
            return try StoreSQL.lane(db, name)!
        }
    }

    package func lane(_ name: String) async throws -> LaneStatus? {
        try await read { db in try StoreSQL.lane(db, name) }
    }
}

extension StoreSQL {
    /// Appends a job to a lane inside its enqueue's transaction, creating the lane on first use.
    /// Returns what the new job must wait for: the tail if it has not finished, or the job that
    /// halted the lane.
    static func laneDependency(_ db: some SQLTransaction, lane: String, policy: LaneFailurePolicy?, now: Double) throws
        -> JobID?
    {
        let row = try db.fetchRow(
            sql: """
                SELECT l.tail_job_id, l.halted_job_id, j.state FROM jobq_lanes l LEFT JOIN jobq_jobs j ON j.id = l.tail_job_id
                WHERE l.name = ?
                """,
            arguments: [lane])
        guard let row else {
            try db.execute(
                sql:
                    "INSERT INTO jobq_lanes (name, on_failure, created_at) VALUES (\(CreateLane.name), \(CreateLane.onFailure), \(CreateLane.createdAt))",
                arguments: CreateLane.arguments([
                    .name: lane, .onFailure: (policy ?? .continue).rawValue, .createdAt: now
                ]))
            return nil
        }
        if let policy {
            try db.execute(
                sql: "UPDATE jobq_lanes SET on_failure = ? WHERE name = ?", arguments: [policy.rawValue, lane])
        }
        if let tail = row["tail_job_id"] as JobID?,
            let state = (row["state"] as String?).flatMap(JobState.init(rawValue:)), !state.isFinal
        {
            return tail
        }
        return row["halted_job_id"]
    }

    static func setLaneTail(_ db: some SQLTransaction, lane: String, job: JobID) throws {
        try db.execute(sql: "UPDATE jobq_lanes SET tail_job_id = ? WHERE name = ?", arguments: [job, lane])
    }

    /// A lane's job finished: a failure halts a `halt` lane; the tail finishing drains the lane.
    static func laneMemberFinished(
        _ db: some SQLTransaction, lane: String, job: FinishedJob
    ) throws {
        let events = db.events
        guard
            let row = try db.fetchRow(
                sql: "SELECT tail_job_id, on_failure, halted_job_id FROM jobq_lanes WHERE name = ?", arguments: [lane])
        else { return }
        let change: EventData.LaneChange
        if job.state != .succeeded, row["on_failure"] as String == LaneFailurePolicy.halt.rawValue,
            row["halted_job_id"] as JobID? == nil
        {
            try db.execute(sql: "UPDATE jobq_lanes SET halted_job_id = ? WHERE name = ?", arguments: [job.id, lane])
            change = .halted(error: job.failureText)
        } else if row["tail_job_id"] as JobID? == job.id {
            change = .drained
        } else {
            return
        }
        events.append(
            .lane(name: lane, change: change, job: job.id), job: job.id, queue: job.queue, executor: job.executor,
            batch: job.batch, workflow: job.workflowID)
    }

    /// Whether `job`'s failure is what holds the lane.
    static func laneHalted(_ db: some SQLTransaction, lane: String, by job: JobID) throws -> Bool {
        try db.fetchOne(JobID.self, sql: "SELECT halted_job_id FROM jobq_lanes WHERE name = ?", arguments: [lane])
            == job
    }

    static func lane(_ db: some SQLTransaction, _ name: String) throws -> LaneStatus? {
        guard let row = try db.fetchRow(sql: "SELECT * FROM jobq_lanes WHERE name = ?", arguments: [name]) else {
            return nil
        }
        let jobs = try db.fetchRows(
            sql: "SELECT \(Job.columns) FROM jobq_jobs WHERE lane = ? ORDER BY id", arguments: [name]
        ).map { Job($0) }
        return LaneStatus(
            name: name, onFailure: LaneFailurePolicy(rawValue: row["on_failure"]) ?? .continue,
            haltedBy: row["halted_job_id"], tail: row["tail_job_id"], jobs: jobs)
    }

    static func noLane(_ name: String) -> JobQueueError {
        .notFound(
            "no lane named '\(name)'; a lane is created by the first job appended to it (`jobq enqueue ... --lane \(name)`)"
        )
    }
}

extension FinishedJob {
    init(_ job: Job) {
        self.init(
            id: job.id, queue: job.queue, executor: job.executor, batch: job.batch, workflowID: job.workflowID,
            groupID: job.groupID,
            lane: job.lane, treeNode: job.treeNode, state: job.state, error: job.error)
    }
}

/// A lane's row.
private enum CreateLane: Int32, SQLParameter, CaseIterable {
    case name = 1
    case onFailure, createdAt
}
