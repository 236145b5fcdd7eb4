import Foundation
import JobQCore

/// A job that reached a final state (succeeded, dead, cancelled) in the current transaction.
package struct FinishedJob: Sendable {
    let id: JobID
    let queue: String
    let executor: String
    let batch: String?
    let workflowID: WorkflowID?
    let groupID: Int64?
    let lane: String?
    /// The tree node it is a job of.
    let treeNode: Int64?
    let state: JobState
    let error: String?

    init(_ job: ClaimedJob, state: JobState, error: String?) {
        self.init(
            id: job.id, queue: job.queue, executor: job.executor, batch: job.batch, workflowID: job.workflowID,
            groupID: job.groupID, lane: job.lane, treeNode: job.treeNode, state: state, error: error)
    }

    init(
        id: JobID, queue: String, executor: String, batch: String?, workflowID: WorkflowID?, groupID: Int64?,
        lane: String?,
        treeNode: Int64?, state: JobState, error: String?
    ) {
        self.id = id
        self.queue = queue
        self.executor = executor
        self.batch = batch
        self.workflowID = workflowID
        self.groupID = groupID
        self.lane = lane
        self.treeNode = treeNode
        self.state = state
        self.error = error
    }

    /// "job 12 (sum) died: boom", for the errors of what its failure ends.
    var failureText: String {
        let how = state == .dead ? "died" : "was cancelled"
        return "job \(id) (\(executor)) \(how)" + (error.map { ": \($0)" } ?? "")
    }
}

/// What the tables say about the whole store, read once per transaction, so that a completion
/// batch of self-contained jobs pays nothing for features it does not use.
package struct StoreFacts {
    /// Some tracking set has a member.
    let trackingMembers: Bool
    /// Some job waits (or waited) for another: finished jobs must look for dependents.
    let dependencies: Bool

    static func read(_ db: some SQLTransaction) throws -> StoreFacts {
        let statement = try db.statement(
            sql: "SELECT EXISTS (SELECT 1 FROM jobq_tracking_members), EXISTS (SELECT 1 FROM jobq_dependencies)")
        defer { statement.reset() }
        guard try statement.step() else { return StoreFacts(trackingMembers: false, dependencies: false) }
        return StoreFacts(trackingMembers: statement.int64(0) != 0, dependencies: statement.int64(1) != 0)
    }
}

/// Everything that follows from jobs reaching final states, in the transaction that put them
/// there: batch counters, lanes, workflow groups (and so workflows), and the jobs that wait for
/// them. Each consequence may finish more jobs (a failed group cancels its members, a cancel
/// policy cancels a dependent); those are settled in turn from a work list, not by recursion,
/// so a chain of any length costs no stack.
extension StoreSQL {
    static func settle(
        _ db: some SQLTransaction, _ finished: [FinishedJob], facts: StoreFacts
    ) throws {
        let events = db.events
        var work = finished
        var next = 0
        var nodes = TreeNodeCache()
        while next < work.count {
            let job = work[next]
            next += 1
            if let batch = job.batch {
                try batchMemberFinished(db, batch: batch, state: job.state, now: events.now, job: job.id)
            }
            // Before the dependents: a lane that halts keeps its next job waiting.
            if let lane = job.lane { try laneMemberFinished(db, lane: lane, job: job) }
            if let group = job.groupID, let node = job.treeNode {
                try treeJobFinished(db, job, node: node, group: group, nodes: &nodes, work: &work)
            } else if let group = job.groupID {
                try groupMemberFinished(
                    db, group: group, outcome: GroupOutcome(job.state), member: .job(job.id), cause: job.failureText,
                    work: &work)
            }
            if facts.dependencies {
                try resolveDependents(
                    of: .job(job.id), db, succeeded: job.state == .succeeded, failure: job, work: &work
                )
            }
        }
    }

    /// Ends unfinished jobs by id (as `cancelled` or `dead`) with `error`, writing their events
    /// (`kind`, or the state's own); returns them for the caller to settle.
    static func end(
        _ db: some SQLTransaction, jobs ids: [JobID], as state: JobState, error: String, kind: EventData.EndKind? = nil
    ) throws -> [FinishedJob] {
        let events = db.events
        guard !ids.isEmpty else { return [] }
        let rows = try db.fetchRows(
            sql: """
                SELECT id, queue, executor, batch, workflow_id, group_id, lane, tree_node, state FROM jobq_jobs
                WHERE \(db.dialect.integer("id", in: "?")) AND state NOT IN ('succeeded', 'dead', 'cancelled')
                """,
            arguments: [jsonArray(ids)])
        guard !rows.isEmpty else { return [] }
        try db.execute(
            sql: """
                UPDATE jobq_jobs SET state = \(EndJobs.state), error = \(EndJobs.error), finished_at = \(EndJobs.finishedAt), lease_until = NULL
                WHERE \(db.dialect.integer("id", in: "\(EndJobs.ids)")) AND state NOT IN ('succeeded', 'dead', 'cancelled')
                """,
            arguments: EndJobs.arguments([
                .state: state.rawValue, .error: error, .finishedAt: events.now,
                .ids: jsonArray(rows.map { $0["id"] as JobID })
            ]))
        return rows.map { row in
            let job = FinishedJob(
                id: row["id"], queue: row["queue"], executor: row["executor"], batch: row["batch"],
                workflowID: row["workflow_id"],
                groupID: row["group_id"], lane: row["lane"], treeNode: row["tree_node"], state: state, error: error)
            events.append(
                .ended(kind ?? (state == .dead ? .dead : .cancelled), from: row["state"], why: error), job: job.id,
                queue: job.queue, executor: job.executor, batch: job.batch, workflow: job.workflowID)
            return job
        }
    }
}

// MARK: Dependencies

/// What a dependency edge points at.
package enum DependencyTarget {
    case job(JobID)
    case group(Int64)

    var column: String {
        switch self {
        case .job: "depends_on"
        case .group: "after_group"
        }
    }

    var id: Int64 {
        switch self {
        case .job(let id), .group(let id): id
        }
    }
}

extension StoreSQL {
    /// Resolves the waiting jobs whose edge points at `target`, which just finished: each one
    /// that has no unmet dependency left becomes ready (or scheduled); a failed dependency
    /// resolves each dependent by its edge's policy (or the job's). A seek on the edge index:
    /// the cost grows with the number of direct dependents, never with the store.
    static func resolveDependents(
        of target: DependencyTarget, _ db: some SQLTransaction, succeeded: Bool, failure: FinishedJob?,
        groupFailure: String? = nil,
        work: inout [FinishedJob]
    ) throws {
        let events = db.events
        let statement = try db.statement(
            sql: """
                SELECT d.job_id, COALESCE(d.policy, j.on_dependency_failure, 'cancel'), j.lane
                FROM jobq_dependencies d JOIN jobq_jobs j ON j.id = d.job_id
                WHERE d.\(target.column) = ? AND j.state = 'waiting'
                """)
        statement.bind(1, target.id)
        var dependents: [(job: JobID, policy: String, lane: String?)] = []
        while try statement.step() {
            dependents.append((statement.int64(0), statement.string(1), statement.optionalString(2)))
        }
        statement.reset()
        if dependents.isEmpty { return }
        if succeeded {
            for dependent in dependents { try dependencyMet(db, job: dependent.job, now: events.now) }
            return
        }
        let note = failedDependencyJSON(target: target, failure: failure, groupFailure: groupFailure)
        let reason = failure.map { "dependency \($0.failureText)" } ?? "dependency \(groupFailure ?? "group failed")"
        var cancelled: [JobID] = []
        var dead: [JobID] = []
        for dependent in dependents {
            var policy = dependent.policy
            if policy == "lane" {
                // A halted lane keeps its next job waiting until `jobq lane resume`.
                if let lane = dependent.lane, case .job(let id) = target, try laneHalted(db, lane: lane, by: id) {
                    continue
                }
                policy = "ignore"
            }
            switch policy {
            case "ignore":
                try noteFailedDependency(db, job: dependent.job, note: note)
                try dependencyMet(db, job: dependent.job, now: events.now)
            case "run":
                try noteFailedDependency(db, job: dependent.job, note: note)
                try release(db, job: dependent.job, now: events.now)
            case "fail":
                dead.append(dependent.job)
            default:
                cancelled.append(dependent.job)
            }
        }
        work += try end(db, jobs: cancelled, as: .cancelled, error: reason)
        work += try end(db, jobs: dead, as: .dead, error: reason)
    }

    private enum DependencyMet: Int32, SQLParameter {
        case now = 1
        case job
    }

    private static let dependencyMetSQL = """
        UPDATE jobq_jobs SET unmet = unmet - 1,
            state = CASE WHEN unmet > 1 THEN 'waiting' WHEN run_at > \(DependencyMet.now) THEN 'scheduled' ELSE 'ready' END
        WHERE id = \(DependencyMet.job) AND state = 'waiting' AND unmet > 0
        RETURNING state, input_from
        """

    /// One dependency of a waiting job is met: it becomes ready (or scheduled) on its last one.
    static func dependencyMet(_ db: some SQLTransaction, job: JobID, now: Double) throws {
        let statement = try db.statement(sql: dependencyMetSQL)
        statement.bind(DependencyMet.now, now)
        statement.bind(DependencyMet.job, job)
        guard try statement.step() else { return statement.reset() }
        let released = statement.string(0) != "waiting"
        let inputFrom = statement.optionalString(1)
        statement.reset()
        if released, let inputFrom { try applyPreviousInput(db, job: job, from: inputFrom) }
    }

    /// Makes a waiting job runnable now, whatever it still waits for (the `run` policy).
    static func release(_ db: some SQLTransaction, job: JobID, now: Double) throws {
        let row = try db.fetchRow(
            sql: """
                UPDATE jobq_jobs SET unmet = 0, state = CASE WHEN run_at > ? THEN 'scheduled' ELSE 'ready' END
                WHERE id = ? AND state = 'waiting' RETURNING input_from
                """,
            arguments: [now, job])
        if let inputFrom = row?["input_from"] as String? { try applyPreviousInput(db, job: job, from: inputFrom) }
    }

    static func noteFailedDependency(_ db: some SQLTransaction, job: JobID, note: String) throws {
        let notes = try db.fetchOne(
            String.self, sql: "SELECT failed_dependencies FROM jobq_jobs WHERE id = ?", arguments: [job])
        try db.execute(
            sql: "UPDATE jobq_jobs SET failed_dependencies = ? WHERE id = ?",
            arguments: [try OrderedJSON.appending(note, to: notes), job])
    }

    static func failedDependencyJSON(target: DependencyTarget, failure: FinishedJob?, groupFailure: String?) -> String {
        var note = JSONObjectBuilder()
        switch target {
        case .job(let id): note.add("job", int: Int(id))
        case .group(let id): note.add("group", int: Int(id))
        }
        note.add("state", string: failure?.state.rawValue ?? "failed")
        note.add("error", string: failure?.error ?? groupFailure)
        return note.text
    }

    private enum Edge: Int32, SQLParameter {
        case job = 1
        case dependsOn, afterGroup, policy
    }

    private static let insertEdgeSQL = insertSQL(
        "jobq_dependencies",
        [
            "job_id": "\(Edge.job)", "depends_on": "\(Edge.dependsOn)", "after_group": "\(Edge.afterGroup)",
            "policy": "\(Edge.policy)"
        ])

    /// Inserts the edges of a new job: on jobs (with an optional per-edge policy) and on groups.
    static func insertEdges(_ db: some SQLTransaction, job: JobID, on targets: [(DependencyTarget, String?)]) throws {
        typealias P = Edge
        let statement = try db.statement(sql: insertEdgeSQL)
        for (target, policy) in targets {
            statement.bind(P.job, job)
            switch target {
            case .job(let id):
                statement.bind(P.dependsOn, id)
                statement.bind(P.afterGroup, nil as Int64?)
            case .group(let id):
                statement.bind(P.dependsOn, nil as Int64?)
                statement.bind(P.afterGroup, id)
            }
            statement.bind(P.policy, policy)
            try statement.run()
        }
    }
}

/// Unfinished jobs ended from outside their attempts.
private enum EndJobs: Int32, SQLParameter, CaseIterable {
    case state = 1
    case error, finishedAt, ids
}
