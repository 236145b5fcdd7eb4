import Foundation
import JobQCore

/// Workflows: a submission compiles onto the dependency edges plus one row per group, in one
/// transaction; reading, listing and cancelling them.
extension SQLStore {
    package func submit(_ workflow: Workflow) async throws -> WorkflowID {
        let steps = try WorkflowValidation.validate(workflow)
        let now = StoreSQL.now()
        return try await write(steps <= 100 ? .short : .long) { db in try StoreSQL.submit(workflow, db: db, now: now) }
    }

    package func workflow(_ id: WorkflowID) async throws -> WorkflowStatus? {
        try await read { db in try StoreSQL.workflow(db, id) }
    }

    package func workflowOutcome(_ id: WorkflowID) async throws -> WorkflowOutcome? {
        try await read { db in
            guard
                let row = try db.fetchRow(
                    sql: "SELECT state, error, root_group FROM jobq_workflows WHERE id = ?", arguments: [id])
            else { return nil }
            let state = WorkflowState(rawValue: row["state"]) ?? .running
            // What a step after the whole workflow would get as "previous", read in one snapshot.
            let result =
                state == .succeeded
                ? try StoreSQL.memberResult(db, "group:\(row["root_group"] as Int64? ?? 0)") : nil
            return WorkflowOutcome(state: state, error: row["error"], resultJSON: result)
        }
    }

    package func workflows(state: WorkflowState?, limit: Int, before: WorkflowID?) async throws -> [WorkflowSummary] {
        typealias P = StoreSQL.WorkflowFilter
        return try await read { db in
            try db.fetchRows(
                sql: """
                    SELECT * FROM jobq_workflows w WHERE (CAST(\(P.state) AS text) IS NULL OR w.state = \(P.state))
                        AND (CAST(\(P.before) AS bigint) IS NULL OR w.id < \(P.before))
                    ORDER BY w.id DESC LIMIT \(P.limit)
                    """,
                arguments: P.arguments([.state: state?.rawValue, .before: before, .limit: limit])
            ).map { row in
                var counts: [String: Int] = [:]
                for count in try db.fetchRows(
                    sql: """
                        SELECT j.state, COUNT(*) AS n FROM jobq_workflow_groups g JOIN jobq_jobs j ON j.group_id = g.id
                        WHERE g.workflow_id = ? GROUP BY j.state
                        """,
                    arguments: [row["id"] as WorkflowID])
                {
                    counts[count["state"]] = count["n"]
                }
                return WorkflowSummary(
                    id: row["id"], name: row["name"], state: WorkflowState(rawValue: row["state"]) ?? .running,
                    stepCounts: counts,
                    error: row["error"], createdAt: Date(timeIntervalSince1970: row["created_at"]),
                    finishedAt: (row["finished_at"] as Double?).map(Date.init(timeIntervalSince1970:)))
            }
        }
    }

    /// Cancels a running workflow, or one of its groups (by name or path): running members are
    /// cancelled and members not started are dropped, at every depth, in one transaction.
    package func cancelWorkflow(_ id: WorkflowID, group: String?) async throws -> WorkflowStatus {
        let now = StoreSQL.now()
        return try await write { db in
            guard
                let workflow = try db.fetchRow(
                    sql: "SELECT state, root_group FROM jobq_workflows WHERE id = ?", arguments: [id])
            else {
                throw StoreSQL.noWorkflow(id)
            }
            guard workflow["state"] as String == WorkflowState.running.rawValue else {
                throw JobQueueError.invalidState(
                    "workflow \(id) is already \(workflow["state"] as String); only running workflows can be cancelled")
            }
            var target: Int64 = workflow["root_group"]
            if let group {
                let matches = try db.fetchRows(
                    sql:
                        "SELECT id, state FROM jobq_workflow_groups WHERE workflow_id = \(FindGroup.workflow) AND (name = \(FindGroup.group) OR path = \(FindGroup.group))",
                    arguments: FindGroup.arguments([.workflow: id, .group: group]))
                guard let match = matches.first else {
                    throw JobQueueError.notFound(
                        "workflow \(id) has no group named or at '\(group)'; `jobq workflow show \(id)` lists its groups and paths"
                    )
                }
                guard matches.count == 1 else {
                    throw JobQueueError.invalidInput(
                        "workflow \(id) has \(matches.count) groups named '\(group)'; name the group by its path")
                }
                guard match["state"] as String == WorkflowState.running.rawValue else {
                    throw JobQueueError.invalidState(
                        "group '\(group)' of workflow \(id) is already \(match["state"] as String)")
                }
                target = match["id"]
            }
            db.stamp(now)
            var work: [FinishedJob] = []
            try StoreSQL.finishGroup(
                db, target, as: .cancelled, cause: "cancelled by an operator", work: &work)
            try StoreSQL.settle(db, work, facts: try StoreFacts.read(db))
            return try StoreSQL.workflow(db, id)!
        }
    }
}

extension StoreSQL {
    /// Everything a submission writes, in the transaction `db` (jobq's own, or the application's),
    /// for a workflow ``WorkflowValidation`` passed: the workflow, its groups, its first jobs and
    /// their events.
    package static func submit(_ workflow: Workflow, db: some SQLTransaction, now: Double) throws -> WorkflowID {
        let id = try db.fetchOne(
            WorkflowID.self,
            sql:
                "INSERT INTO jobq_workflows (name, state, context, created_at) VALUES (\(InsertWorkflow.name), 'running', \(InsertWorkflow.context), \(InsertWorkflow.createdAt)) RETURNING id",
            arguments: InsertWorkflow.arguments([
                .name: workflow.name, .context: JSONText.minified(JSONValue.object(workflow.context).jsonText),
                .createdAt: now
            ]))!
        db.stamp(now)
        var compiler = WorkflowCompiler(db: db, workflow: id)
        _ = try compiler.compile(workflow.root, parent: nil, position: 0, path: "$", waitsFor: [], tolerant: false)
        try db.execute(
            sql:
                """
                UPDATE jobq_workflows SET root_group = (SELECT id FROM jobq_workflow_groups WHERE workflow_id = ? AND parent_id IS NULL)
                WHERE id = ?
                """,
            arguments: [id, id])
        return id
    }
}

extension StoreSQL {
    static func workflow(_ db: some SQLTransaction, _ id: WorkflowID) throws -> WorkflowStatus? {
        guard let row = try db.fetchRow(sql: "SELECT * FROM jobq_workflows WHERE id = ?", arguments: [id]) else {
            return nil
        }
        let groups = try db.fetchRows(
            sql: "SELECT * FROM jobq_workflow_groups WHERE workflow_id = ? ORDER BY id", arguments: [id])
        let jobs = try db.fetchRows(
            sql: """
                SELECT \(Job.columns), group_position FROM jobq_jobs
                WHERE group_id IN (SELECT id FROM jobq_workflow_groups WHERE workflow_id = ?)
                """,
            arguments: [id])
        // Members by group, in position order: jobs and groups interleaved as submitted.
        var members: [Int64: [(position: Int, member: WorkflowMember)]] = [:]
        for job in jobs {
            let parsed = Job(job)
            members[parsed.groupID ?? 0, default: []].append((job["group_position"], .job(parsed)))
        }
        var byID: [Int64: SQLRow] = [:]
        for group in groups {
            byID[group["id"]] = group
            if let parent = group["parent_id"] as Int64? {
                members[parent, default: []].append((group["position"], .group(group["id"])))
            }
        }
        func build(_ id: Int64) -> WorkflowStatus.Group {
            let row = byID[id]!
            let ordered = (members[id] ?? []).sorted { $0.position < $1.position }
            return WorkflowStatus.Group(
                id: id, kind: WorkflowStatus.GroupKind(rawValue: row["kind"]) ?? .sequence, treeNode: row["tree_node"],
                name: row["name"],
                path: row["path"],
                onFailure: WorkflowGroup.FailurePolicy(rawValue: row["on_failure"]) ?? .fail,
                state: WorkflowState(rawValue: row["state"]) ?? .running,
                counts: .init(
                    total: row["total"], succeeded: row["succeeded"], failed: row["failed"], cancelled: row["cancelled"]
                ),
                finishedAt: (row["finished_at"] as Double?).map(Date.init(timeIntervalSince1970:)),
                members: ordered.map { entry in
                    switch entry.member {
                    case .job(let job): .job(job)
                    case .group(let child): .group(build(child))
                    }
                })
        }
        guard let rootID = row["root_group"] as Int64?, byID[rootID] != nil else { return nil }
        var jobsByNode: [Int64: [JobState: Int]] = [:]
        for job in jobs {
            if let node = job["tree_node"] as Int64?, let state = JobState(rawValue: job["state"]) {
                jobsByNode[node, default: [:]][state, default: 0] += 1
            }
        }
        return WorkflowStatus(
            id: id, name: row["name"], state: WorkflowState(rawValue: row["state"]) ?? .running,
            contextJSON: row["context"],
            error: row["error"], createdAt: Date(timeIntervalSince1970: row["created_at"]),
            finishedAt: (row["finished_at"] as Double?).map(Date.init(timeIntervalSince1970:)), root: build(rootID),
            trees: try trees(db, workflow: id, jobsByNode: jobsByNode))
    }

    private static func trees(_ db: some SQLTransaction, workflow: WorkflowID, jobsByNode: [Int64: [JobState: Int]])
        throws -> [TreeStatus]
    {
        let nodes = try db.fetchRows(
            sql: """
                SELECT n.* FROM jobq_tree_nodes n WHERE n.tree_id IN (SELECT id FROM jobq_trees WHERE workflow_id = ?) ORDER BY n.tree_id, n.id
                """,
            arguments: [workflow])
        let byTree = Dictionary(grouping: nodes) { $0["tree_id"] as Int64 }
        return try db.fetchRows(
            sql: "SELECT * FROM jobq_trees WHERE workflow_id = ? ORDER BY id", arguments: [workflow]
        ).map { tree in
            let id: Int64 = tree["id"]
            return TreeStatus(
                id: id, group: tree["root_group"] ?? 0, maxJobs: tree["max_jobs"], jobsCreated: tree["jobs"],
                nodes: preorder(byTree[id] ?? []).map { node in
                    TreeStatus.Node(
                        id: node["id"], parentID: node["parent_id"], name: node["name"], path: node["path"],
                        executor: node["executor"],
                        each: node["each_pointer"],
                        onFailure: TreeNode.FailurePolicy(rawValue: node["on_failure"]) ?? .failTree,
                        jobs: jobsByNode[node["id"]] ?? [:])
                })
        }
    }

    /// Nodes root first, each before its children, children by position.
    private static func preorder(_ nodes: [SQLRow]) -> [SQLRow] {
        let children = Dictionary(grouping: nodes) { $0["parent_id"] as Int64? ?? 0 }
        func walk(_ parent: Int64) -> [SQLRow] {
            (children[parent] ?? []).sorted { ($0["position"] as Int) < ($1["position"] as Int) }.flatMap {
                [$0] + walk($0["id"])
            }
        }
        return walk(0)
    }

    static func noWorkflow(_ id: WorkflowID) -> JobQueueError {
        .notFound("no workflow with id \(id); list workflows with `jobq workflow list`")
    }
}

/// Turns a workflow's groups into group rows and its steps into jobs with edges, inside the
/// submission's transaction.
///
/// A member of a sequence waits for the member before it: for a step, one edge to its job; for
/// a group, one edge to the group, resolved when the group finishes (so a sequence of two
/// parallel groups of n members costs 2n edges, not n²). The first members of a group wait for
/// what the group waits for. A group with no steps at all finishes at once and is passed
/// through: what follows it waits for what came before it.
package struct WorkflowCompiler<Transaction: SQLTransaction> {
    let db: Transaction
    let workflow: WorkflowID

    /// Something a member waits for, and whether its failure is contained by a `continue` group
    /// around it (then what waits for it runs anyway: the edge's policy is `ignore`).
    struct Predecessor {
        let target: DependencyTarget
        let contained: Bool
    }

    /// A compiled member: how to refer to its result, and what the next member waits for.
    struct Compiled {
        let reference: String
        let exits: [Predecessor]
        /// Whether it holds a step at any depth (a group without one finishes at submission).
        let hasSteps: Bool
    }

    mutating func compile(
        _ group: WorkflowGroup, parent: Int64?, position: Int, path: String, waitsFor: [Predecessor], tolerant: Bool
    ) throws -> Compiled {
        let id = try db.fetchOne(
            Int64.self,
            sql: """
                INSERT INTO jobq_workflow_groups (workflow_id, parent_id, position, kind, name, path, on_failure, state, total)
                VALUES (\(InsertGroup.workflow), \(InsertGroup.parent), \(InsertGroup.position), \(InsertGroup.kind), \(InsertGroup.name), \(InsertGroup.path), \(InsertGroup.onFailure), 'running', \(InsertGroup.total)) RETURNING id
                """,
            arguments: InsertGroup.arguments([
                .workflow: workflow, .parent: parent, .position: position, .kind: group.kind.rawValue,
                .name: group.name, .path: path, .onFailure: group.onFailure.rawValue, .total: group.members.count
            ]))!
        let inner = tolerant || group.onFailure == .continue
        var current = waitsFor
        var previous: String?
        var hasSteps = false
        for (index, member) in group.members.enumerated() {
            let memberPath = "\(path).\(group.kind.rawValue)[\(index)]"
            let waits = group.kind == .sequence ? current : waitsFor
            let compiled: Compiled
            switch member {
            case .step(let step):
                compiled = try compile(
                    step, group: id, position: index, waitsFor: waits, contained: inner,
                    previous: step.input == .previous ? previous : nil)
            case .group(let child):
                compiled = try compile(
                    child, parent: id, position: index, path: memberPath, waitsFor: waits, tolerant: inner)
            case .tree(let tree):
                compiled = try compile(
                    tree, group: id, position: index, path: memberPath, waitsFor: waits, contained: inner,
                    previous: tree.input == .previous ? previous : nil)
            }
            hasSteps = hasSteps || compiled.hasSteps
            current = compiled.exits
            previous = compiled.reference
        }
        if !hasSteps {
            // Nothing will ever finish in it: it is complete now, and counts as succeeded.
            var work: [FinishedJob] = []
            try StoreSQL.finishGroup(db, id, as: .succeeded, cause: nil, work: &work)
            return Compiled(reference: "group:\(id)", exits: waitsFor, hasSteps: false)
        }
        return Compiled(
            reference: "group:\(id)", exits: [Predecessor(target: .group(id), contained: tolerant)], hasSteps: true)
    }

    private mutating func compile(
        _ step: WorkflowStep, group: Int64, position: Int, waitsFor: [Predecessor], contained: Bool, previous: String?
    ) throws -> Compiled {
        let placement = StoreSQL.Placement(
            workflow: workflow, group: group, position: position, inputFrom: previous,
            edges: waitsFor.map { ($0.target, $0.contained ? DependencyPolicy.ignore.rawValue : nil) })
        let job = try StoreSQL.insert(step.request, db: db, now: db.events.now, placement: placement)
        // Released at once (it follows only groups with no steps): its input is ready now.
        if job.state != .waiting, let previous { try StoreSQL.applyPreviousInput(db, job: job.id, from: previous) }
        return Compiled(
            reference: "job:\(job.id)", exits: [Predecessor(target: .job(job.id), contained: contained)], hasSteps: true
        )
    }
}

/// A member of a workflow group as read back: a step's job or a nested group.
private enum WorkflowMember {
    case job(Job)
    case group(Int64)
}

extension StoreSQL {
    /// The parameters of a page of workflows: a state or NULL for any, an id to list below or
    /// NULL for the newest, and how many.
    enum WorkflowFilter: Int32, SQLParameter, CaseIterable {
        case state = 1
        case before, limit
    }
}

/// A workflow's group by name or path.
private enum FindGroup: Int32, SQLParameter, CaseIterable {
    case workflow = 1
    case group
}

/// A workflow's row.
private enum InsertWorkflow: Int32, SQLParameter, CaseIterable {
    case name = 1
    case context, createdAt
}

/// A workflow group's row.
private enum InsertGroup: Int32, SQLParameter, CaseIterable {
    case workflow = 1
    case parent, position, kind, name, path, onFailure, total
}
