import Foundation
import JobQCore

/// How a member (a job or a group) ended, as its group counts it.
package enum GroupOutcome: String {
    case succeeded
    case failed
    case cancelled

    init(_ state: JobState) {
        switch state {
        case .dead: self = .failed
        case .cancelled: self = .cancelled
        default: self = .succeeded
        }
    }
}

/// A member of a workflow group: a job, or a group with the jobs of its whole subtree by
/// outcome (which its parent adds to its own).
package enum GroupMember {
    case job(JobID)
    /// That many jobs, all ending the same way, counted together (successes recorded in one
    /// statement).
    case jobs(Int)
    case group(Int64, jobs: SubtreeJobs)

    /// How many members it counts as.
    var count: Int {
        switch self {
        case .job, .group: 1
        case .jobs(let count): count
        }
    }
}

/// The jobs of a group's whole subtree by how they ended.
package struct SubtreeJobs: Sendable {
    var succeeded = 0
    var failed = 0
    var cancelled = 0

    var total: Int { succeeded + failed + cancelled }

    init(succeeded: Int = 0, failed: Int = 0, cancelled: Int = 0) {
        self.succeeded = succeeded
        self.failed = failed
        self.cancelled = cancelled
    }

    init(_ outcome: GroupOutcome, jobs: Int = 1) {
        switch outcome {
        case .succeeded: succeeded = jobs
        case .failed: failed = jobs
        case .cancelled: cancelled = jobs
        }
    }

    var json: String {
        "{\"jobs\":\(total),\"succeeded\":\(succeeded),\"failed\":\(failed),\"cancelled\":\(cancelled)}"
    }
}

/// Workflow groups: counters kept by the transactions that finish their members, completion
/// decided by one comparison, failure handled by the group's policy, and the workflow finished
/// with its top group.
extension StoreSQL {
    /// The parameters of statements about one group and the groups under it.
    enum GroupParameter: Int32, SQLParameter {
        case group = 1
        case now
    }

    /// The ids of a group and of every group under it, as the CTE `subtree`.
    static let subtreeCTE = """
        WITH RECURSIVE subtree(id) AS (
            SELECT CAST(\(GroupParameter.group) AS bigint)
            UNION ALL SELECT g.id FROM jobq_workflow_groups g JOIN subtree s ON g.parent_id = s.id)
        """

    /// The parameters of a member's end counted into its group.
    enum MemberCounts: Int32, SQLParameter {
        case group = 1
        case succeeded, failed, cancelled, jobsSucceeded, jobsFailed, jobsCancelled
    }

    /// Counts a member's end (and the jobs of its subtree by outcome) into its running group.
    static let memberFinishedSQL: String = {
        typealias P = MemberCounts
        return """
            UPDATE jobq_workflow_groups SET succeeded = succeeded + \(P.succeeded), failed = failed + \(P.failed),
                cancelled = cancelled + \(P.cancelled), jobs_succeeded = jobs_succeeded + \(P.jobsSucceeded),
                jobs_failed = jobs_failed + \(P.jobsFailed), jobs_cancelled = jobs_cancelled + \(P.jobsCancelled)
            WHERE id = \(P.group) AND state = 'running'
            RETURNING on_failure, total, succeeded + failed + cancelled
            """
    }()

    /// Counts a member's outcome into its group, and finishes the group when that decides it:
    /// its last member finished, or (policy `fail`) a member died or was cancelled, or
    /// (`endsGroup`: a tree job that failed in its own group) the member was the group's reason
    /// to be.
    static func groupMemberFinished(
        _ db: some SQLTransaction, group: Int64, outcome: GroupOutcome, member: GroupMember, cause: String,
        endsGroup: Bool = false,
        work: inout [FinishedJob]
    ) throws {
        let jobs: SubtreeJobs
        switch member {
        case .job: jobs = SubtreeJobs(outcome)
        case .jobs(let count): jobs = SubtreeJobs(outcome, jobs: count)
        case .group(_, let subtree): jobs = subtree
        }
        typealias P = MemberCounts
        let statement = try db.statement(sql: memberFinishedSQL)
        statement.bind(P.group, group)
        statement.bind(P.succeeded, outcome == .succeeded ? member.count : 0)
        statement.bind(P.failed, outcome == .failed ? member.count : 0)
        statement.bind(P.cancelled, outcome == .cancelled ? member.count : 0)
        statement.bind(P.jobsSucceeded, jobs.succeeded)
        statement.bind(P.jobsFailed, jobs.failed)
        statement.bind(P.jobsCancelled, jobs.cancelled)
        // A group that already ended (failed, cancelled) no longer counts its members.
        guard try statement.step() else { return statement.reset() }
        let failFast = statement.string(0) == "fail"
        let total = statement.int(1)
        let done = statement.int(2)
        statement.reset()
        if endsGroup {
            try finishGroup(db, group, as: outcome, cause: cause, work: &work)
        } else if outcome != .succeeded, failFast {
            try finishGroup(db, group, as: outcome, cause: cause, work: &work)
        } else if done >= total {
            try finishGroup(db, group, as: .succeeded, cause: nil, work: &work)
        }
    }

    /// Ends a running group. A group that did not succeed first ends everything under it: groups
    /// not finished are cancelled, and jobs not finished are cancelled (a running one's worker
    /// notices and stops it; its late result is refused by the completion fence). Then its
    /// `group` event, what waits for it, and its parent (or, for the top group, the workflow).
    static func finishGroup(
        _ db: some SQLTransaction, _ id: Int64, as outcome: GroupOutcome, cause: String?, work: inout [FinishedJob]
    ) throws {
        let events = db.events
        guard
            let group = try db.fetchRow(
                sql: """
                    UPDATE jobq_workflow_groups SET state = \(FinishGroup.state), finished_at = \(FinishGroup.finishedAt) WHERE id = \(FinishGroup.id) AND state = 'running'
                    RETURNING workflow_id, parent_id, kind, name, path, on_failure, total, succeeded, failed, cancelled, tree_node,
                        jobs_succeeded, jobs_failed, jobs_cancelled
                    """,
                arguments: FinishGroup.arguments([.state: outcome.rawValue, .finishedAt: events.now, .id: id]))
        else { return }
        let workflow: WorkflowID = group["workflow_id"]
        let path: String = group["path"]
        let how = outcome == .failed ? "failed" : "was cancelled"
        let summary = outcome == .succeeded ? nil : "group \(path) \(how)" + (cause.map { ": \($0)" } ?? "")
        var counts = (
            total: group["total"] as Int, succeeded: group["succeeded"] as Int, failed: group["failed"] as Int,
            cancelled: group["cancelled"] as Int
        )
        var jobs = SubtreeJobs(
            succeeded: group["jobs_succeeded"], failed: group["jobs_failed"], cancelled: group["jobs_cancelled"])
        if let summary {
            work += try cancelUnder(db, group: id, reason: summary)
            counts = try memberCounts(db, group: id, total: counts.total)
            jobs = try subtreeJobs(db, group: id)
        }
        let failures = counts.failed + counts.cancelled > 0 ? try failuresJSON(db, group: id) : nil
        if let node = group["tree_node"] as Int64? {
            try treeGroupFinished(
                db, id, node: node, workflow: workflow, path: path, outcome: outcome, jobs: jobs, failures: failures,
                error: summary)
        } else {
            var countsJSON = JSONObjectBuilder()
            countsJSON.add("total", int: counts.total)
            countsJSON.add("succeeded", int: counts.succeeded)
            countsJSON.add("failed", int: counts.failed)
            countsJSON.add("cancelled", int: counts.cancelled)
            events.append(
                .group(
                    id: id, name: group["name"], path: path, kind: group["kind"], state: outcome.rawValue,
                    rawCounts: countsJSON.text, rawFailures: failures, error: summary),
                job: nil, queue: nil, executor: nil, batch: nil, workflow: workflow)
        }

        try resolveDependents(
            of: .group(id), db, succeeded: outcome == .succeeded, failure: nil, groupFailure: summary, work: &work)
        if let parent = group["parent_id"] as Int64? {
            try groupMemberFinished(
                db, group: parent, outcome: outcome, member: .group(id, jobs: jobs), cause: summary ?? "", work: &work)
        } else {
            try workflowFinished(db, workflow, as: outcome, error: summary)
        }
    }

    /// The jobs of a group's subtree by outcome, counted from their rows (after a failure, when
    /// the counters no longer tell the whole story).
    static func subtreeJobs(_ db: some SQLTransaction, group: Int64) throws -> SubtreeJobs {
        let rows = try db.fetchRows(
            sql: """
                \(subtreeCTE)
                SELECT state, COUNT(*) AS n FROM jobq_jobs WHERE group_id IN (SELECT id FROM subtree) GROUP BY state
                """,
            arguments: [group])
        var jobs = SubtreeJobs()
        for row in rows {
            switch row["state"] as String {
            case "succeeded": jobs.succeeded += row["n"] as Int
            case "dead": jobs.failed += row["n"] as Int
            case "cancelled": jobs.cancelled += row["n"] as Int
            default: break
            }
        }
        return jobs
    }

    /// Cancels the running groups below `group` and every unfinished job at any depth under it.
    private static func cancelUnder(
        _ db: some SQLTransaction, group: Int64, reason: String
    ) throws -> [FinishedJob] {
        let events = db.events
        typealias P = GroupParameter
        let cancelledGroups = try db.fetchRows(
            sql: """
                \(subtreeCTE)
                UPDATE jobq_workflow_groups SET state = 'cancelled', finished_at = \(P.now)
                WHERE id IN (SELECT id FROM subtree) AND id != \(P.group) AND state = 'running'
                RETURNING id, workflow_id, kind, name, path, total, tree_node
                """,
            arguments: [group, events.now])
        let unfinished = try db.fetchAll(
            JobID.self,
            sql: """
                \(subtreeCTE)
                SELECT id FROM jobq_jobs WHERE group_id IN (SELECT id FROM subtree)
                    AND state NOT IN ('succeeded', 'dead', 'cancelled')
                """,
            arguments: [group])
        let ended = try end(db, jobs: unfinished, as: .cancelled, error: reason)
        for row in cancelledGroups {
            if let node = row["tree_node"] as Int64? {
                // A tree cancelled from above still tells its end: `subtree`, and `tree` for its root.
                try treeGroupFinished(
                    db, row["id"], node: node, workflow: row["workflow_id"], path: row["path"], outcome: .cancelled,
                    jobs: nil,
                    failures: nil, error: reason)
                continue
            }
            events.append(
                .group(
                    id: row["id"], name: row["name"], path: row["path"], kind: row["kind"], state: "cancelled",
                    rawCounts: nil, rawFailures: nil, error: reason),
                job: nil, queue: nil, executor: nil, batch: nil, workflow: row["workflow_id"])
        }
        return ended
    }

    /// A group's direct members by how they ended, counted from their rows.
    private static func memberCounts(_ db: some SQLTransaction, group: Int64, total: Int) throws -> (
        total: Int, succeeded: Int, failed: Int, cancelled: Int
    ) {
        let rows = try db.fetchRows(
            sql: """
                SELECT state, COUNT(*) AS n FROM jobq_jobs WHERE group_id = \(GroupParameter.group) GROUP BY state
                UNION ALL
                SELECT state, COUNT(*) FROM jobq_workflow_groups WHERE parent_id = \(GroupParameter.group) GROUP BY state
                """,
            arguments: [group])
        var counts = (total: total, succeeded: 0, failed: 0, cancelled: 0)
        for row in rows {
            let n: Int = row["n"]
            switch row["state"] as String {
            case "succeeded": counts.succeeded += n
            case "dead", "failed": counts.failed += n
            case "cancelled": counts.cancelled += n
            default: break
            }
        }
        return counts
    }

    /// The group's direct members that did not succeed (at most 50), as a JSON array.
    private static func failuresJSON(_ db: some SQLTransaction, group: Int64) throws -> String {
        let rows = try db.fetchRows(
            sql: """
                SELECT 'job' AS kind, id, executor AS name, state, error, group_position AS p
                FROM jobq_jobs WHERE group_id = \(GroupParameter.group) AND state IN ('dead', 'cancelled')
                UNION ALL
                SELECT 'group', id, path, state, NULL, position
                FROM jobq_workflow_groups WHERE parent_id = \(GroupParameter.group) AND state IN ('failed', 'cancelled')
                ORDER BY p LIMIT 50
                """,
            arguments: [group])
        return jsonArray(
            raw: rows.map { row in
                var item = JSONObjectBuilder()
                if row["kind"] as String == "job" {
                    item.add("job", int: row["id"])
                    item.add("executor", string: row["name"])
                    item.add("state", string: row["state"])
                    item.add("error", raw: (row["error"] as String?).map(JSONText.string) ?? "null")
                } else {
                    item.add("group", int: row["id"])
                    item.add("path", string: row["name"])
                    item.add("state", string: row["state"])
                }
                return item.text
            })
    }

    /// Ends a workflow with its top group, writing its `workflow` event with its steps' counts.
    static func workflowFinished(
        _ db: some SQLTransaction, _ id: WorkflowID, as outcome: GroupOutcome, error: String?
    ) throws {
        let events = db.events
        guard
            let row = try db.fetchRow(
                sql:
                    "UPDATE jobq_workflows SET state = \(FinishWorkflow.state), finished_at = \(FinishWorkflow.finishedAt), error = \(FinishWorkflow.error) WHERE id = \(FinishWorkflow.id) AND state = 'running' RETURNING name",
                arguments: FinishWorkflow.arguments([
                    .state: outcome.rawValue, .finishedAt: events.now, .error: error, .id: id
                ]))
        else { return }
        let counts = jsonObject(
            try db.fetchRows(
                sql: """
                    SELECT j.state, COUNT(*) AS n FROM jobq_workflow_groups g JOIN jobq_jobs j ON j.group_id = g.id
                    WHERE g.workflow_id = ? GROUP BY j.state ORDER BY j.state
                    """,
                arguments: [id]
            ).map { ($0["state"], String($0["n"] as Int)) })
        events.append(
            .workflow(name: row["name"], state: outcome.rawValue, rawCounts: counts, error: error), job: nil,
            queue: nil, executor: nil, batch: nil, workflow: id)
    }

    // MARK: Passing results along

    /// Merges the result of the member `from` names (`job:<id>` or `group:<id>`) into a job's
    /// payload under "previous", as the job is released.
    static func applyPreviousInput(_ db: some SQLTransaction, job: JobID, from reference: String) throws {
        let value = try memberResult(db, reference)
        let read = try db.statement(sql: "SELECT payload FROM jobq_jobs WHERE id = ?")
        read.bind(1, job)
        guard try read.step() else { return read.reset() }
        let payload = read.string(0)
        read.reset()
        let update = try db.statement(sql: "UPDATE jobq_jobs SET payload = ? WHERE id = ?")
        update.bind(1, try OrderedJSON.setting("previous", to: value, in: payload))
        update.bind(2, job)
        try update.run()
    }

    /// A member's result as JSON text: a job's result (null unless it succeeded); a sequence's
    /// last member's; a parallel group's members' results as an array, in order.
    static func memberResult(_ db: some SQLTransaction, _ reference: String) throws -> String {
        let parts = reference.split(separator: ":", maxSplits: 1)
        guard parts.count == 2, let id = Int64(parts[1]) else { return "null" }
        if parts[0] == "job" {
            return try db.fetchOne(
                String.self, sql: "SELECT result FROM jobq_jobs WHERE id = ? AND state = 'succeeded'", arguments: [id])
                ?? "null"
        }
        let kind = try db.fetchOne(
            String.self, sql: "SELECT kind FROM jobq_workflow_groups WHERE id = ?", arguments: [id])
        let members = try db.fetchRows(
            sql: """
                SELECT 'job' AS kind, id, group_position AS p FROM jobq_jobs WHERE group_id = \(GroupParameter.group)
                UNION ALL SELECT 'group', id, position FROM jobq_workflow_groups WHERE parent_id = \(GroupParameter.group)
                ORDER BY p
                """,
            arguments: [id]
        ).map { "\($0["kind"] as String):\($0["id"] as Int64)" }
        if kind == "sequence" {
            return try members.last.map { try memberResult(db, $0) } ?? "null"
        }
        if kind == "tree" {
            // A tree's result is its root job's.
            return try members.first.map { try memberResult(db, $0) } ?? "null"
        }
        return "[" + (try members.map { try memberResult(db, $0) }).joined(separator: ",") + "]"
    }
}

/// A workflow group that finished.
private enum FinishGroup: Int32, SQLParameter, CaseIterable {
    case state = 1
    case finishedAt, id
}

/// A workflow that finished.
private enum FinishWorkflow: Int32, SQLParameter, CaseIterable {
    case state = 1
    case finishedAt, error, id
}
