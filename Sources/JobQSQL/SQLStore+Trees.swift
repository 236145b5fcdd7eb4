import Foundation
import JobQCore

/// A tree node as the transactions that run a tree read it.
package struct TreeNodeRow: Sendable {
    let id: Int64
    let treeID: Int64
    let parentID: Int64?
    let name: String
    let path: String
    let executor: String
    let each: String?
    let withObject: String?
    let onFailure: TreeNode.FailurePolicy
    let queue: String
    let priority: Int
    let maxAttempts: Int
    let timeout: Double?
    let leaf: Bool
    /// The group of the tree's root job: the whole tree.
    let rootGroup: Int64

    /// The columns ``init(_:)`` reads, in the order a query selects them: the node's (`n`), then
    /// its tree's root group (`t`).
    enum Column: Int32, SQLColumns {
        case id, treeID, parentID, name, path, executor, eachPointer, withObject, onFailure, queue, priority
        case maxAttempts, timeout, leaf, rootGroup
    }

    static let columns = Column.allCases.map { $0 == .rootGroup ? "t.root_group" : "n.\($0.name)" }
        .joined(separator: ", ")

    init(_ row: some ColumnReader) {
        typealias C = Column
        id = row.int64(C.id)
        treeID = row.int64(C.treeID)
        parentID = row.optionalInt64(C.parentID)
        name = row.string(C.name)
        path = row.string(C.path)
        executor = row.string(C.executor)
        each = row.optionalString(C.eachPointer)
        withObject = row.optionalString(C.withObject)
        onFailure = TreeNode.FailurePolicy(rawValue: row.string(C.onFailure)) ?? .failTree
        queue = row.string(C.queue)
        priority = row.int(C.priority)
        maxAttempts = row.int(C.maxAttempts)
        timeout = row.optionalDouble(C.timeout)
        leaf = row.int(C.leaf) != 0
        rootGroup = row.int64(C.rootGroup)
    }

    /// Whether its jobs get a group of their own (to hold what their success creates). The
    /// root's job always has one: it is the tree.
    var ownsGroups: Bool { !leaf || parentID == nil }
}

/// The tree nodes one transaction has read, so that a completion batch of a thousand leaves
/// reads their node once.
package struct TreeNodeCache {
    private var nodes: [Int64: TreeNodeRow] = [:]
    private var children: [Int64: [TreeNodeRow]] = [:]

    mutating func node(_ db: some SQLTransaction, _ id: Int64) throws -> TreeNodeRow {
        if let node = nodes[id] { return node }
        let statement = try db.statement(
            sql:
                "SELECT \(TreeNodeRow.columns) FROM jobq_tree_nodes n JOIN jobq_trees t ON t.id = n.tree_id WHERE n.id = ?"
        )
        statement.bind(1, id)
        defer { statement.reset() }
        guard try statement.step() else {
            throw JobQueueError.storeUnavailable("tree node \(id) is missing from the store")
        }
        let node = TreeNodeRow(statement)
        nodes[id] = node
        return node
    }

    mutating func children(_ db: some SQLTransaction, of id: Int64) throws -> [TreeNodeRow] {
        if let cached = children[id] { return cached }
        let statement = try db.statement(
            sql: """
                SELECT \(TreeNodeRow.columns) FROM jobq_tree_nodes n JOIN jobq_trees t ON t.id = n.tree_id
                WHERE n.parent_id = ? ORDER BY n.position
                """)
        statement.bind(1, id)
        var rows: [TreeNodeRow] = []
        while try statement.step() { rows.append(TreeNodeRow(statement)) }
        statement.reset()
        children[id] = rows
        for row in rows { nodes[row.id] = row }
        return rows
    }
}

// MARK: Submitting

extension WorkflowCompiler {
    /// Stores a tree's nodes, its budget, and its root job in the group that stands for the
    /// whole tree; what follows the tree waits for that group.
    mutating func compile(
        _ tree: JobTree, group parent: Int64, position: Int, path: String, waitsFor: [Predecessor], contained: Bool,
        previous: String?
    ) throws -> Compiled {
        let treeID = try db.fetchOne(
            Int64.self, sql: "INSERT INTO jobq_trees (workflow_id, max_jobs, jobs) VALUES (?, ?, 1) RETURNING id",
            arguments: [workflow, tree.maxJobs])!
        let root = try insertNode(tree.root, tree: treeID, parent: nil, position: 0, path: tree.root.name)
        let group = try db.fetchOne(
            Int64.self,
            sql: """
                INSERT INTO jobq_workflow_groups (workflow_id, parent_id, position, kind, name, path, on_failure, state, total, tree_node)
                VALUES (\(InsertTreeGroup.workflow), \(InsertTreeGroup.parent), \(InsertTreeGroup.position), 'tree', \(InsertTreeGroup.name), \(InsertTreeGroup.path), 'continue', 'running', 1, \(InsertTreeGroup.root)) RETURNING id
                """,
            arguments: InsertTreeGroup.arguments([
                .workflow: workflow, .parent: parent, .position: position, .name: tree.root.name, .path: path,
                .root: root
            ]))!
        try db.execute(sql: "UPDATE jobq_trees SET root_group = ? WHERE id = ?", arguments: [group, treeID])
        var options = tree.root.options
        options.name = tree.root.name
        let request = try JobRequest(executor: tree.root.executor, payloadJSON: tree.inputJSON, options: options)
        let placement = StoreSQL.Placement(
            workflow: workflow, group: group, position: 0, inputFrom: previous,
            edges: waitsFor.map { ($0.target, $0.contained ? DependencyPolicy.ignore.rawValue : nil) }, treeNode: root)
        let job = try StoreSQL.insert(request, db: db, now: db.events.now, placement: placement)
        if job.state != .waiting, let previous { try StoreSQL.applyPreviousInput(db, job: job.id, from: previous) }
        return Compiled(
            reference: "group:\(group)", exits: [Predecessor(target: .group(group), contained: contained)],
            hasSteps: true)
    }

    private func insertNode(_ node: TreeNode, tree: Int64, parent: Int64?, position: Int, path: String) throws -> Int64
    {
        let withObject = node.with.map { JSONText.minified(JSONValue.object($0).jsonText) }
        let id = try db.fetchOne(
            Int64.self,
            sql: """
                INSERT INTO jobq_tree_nodes (tree_id, parent_id, position, name, path, executor, each_pointer, with_object, on_failure,
                    queue, priority, max_attempts, timeout, leaf)
                VALUES (\(InsertTreeNode.tree), \(InsertTreeNode.parent), \(InsertTreeNode.position), \(InsertTreeNode.name), \(InsertTreeNode.path), \(InsertTreeNode.executor), \(InsertTreeNode.each), \(InsertTreeNode.withObject), \(InsertTreeNode.onFailure), \(InsertTreeNode.queue), \(InsertTreeNode.priority), \(InsertTreeNode.maxAttempts), \(InsertTreeNode.timeout), \(InsertTreeNode.leaf)) RETURNING id
                """,
            arguments: InsertTreeNode.arguments([
                .tree: tree, .parent: parent, .position: position, .name: node.name, .path: path,
                .executor: node.executor, .each: node.each, .withObject: withObject,
                .onFailure: node.onFailure.rawValue, .queue: node.options.queue, .priority: node.options.priority,
                .maxAttempts: node.options.maxAttempts, .timeout: node.options.timeout?.inSeconds,
                .leaf: node.children.isEmpty
            ]))!
        for (index, child) in node.children.enumerated() {
            _ = try insertNode(child, tree: tree, parent: id, position: index, path: "\(path)/\(child.name)")
        }
        return id
    }
}

// MARK: Running

extension StoreSQL {
    /// A job of a tree finished: on success its children are created (in this transaction),
    /// then it counts into its group; on failure its node's policy decides whether the tree
    /// fails or only this job's subtree.
    static func treeJobFinished(
        _ db: some SQLTransaction, _ job: FinishedJob, node id: Int64, group: Int64, nodes: inout TreeNodeCache,
        work: inout [FinishedJob]
    ) throws {
        let node = try nodes.node(db, id)
        if job.state == .succeeded {
            if !node.leaf { try expand(db, job, node: node, group: group, nodes: &nodes, work: &work) }
            try groupMemberFinished(
                db, group: group, outcome: .succeeded, member: .job(job.id), cause: "", work: &work)
            return
        }
        let cause = try failureText(db, job, node: node)
        if node.onFailure == .failTree {
            try finishGroup(db, node.rootGroup, as: .failed, cause: cause, work: &work)
        } else {
            try groupMemberFinished(
                db, group: group, outcome: GroupOutcome(job.state), member: .job(job.id), cause: cause,
                endsGroup: node.ownsGroups,
                work: &work)
        }
    }

    /// "node cookbook/recipe (job 14, input "r2") died: boom"
    private static func failureText(_ db: some SQLTransaction, _ job: FinishedJob, node: TreeNodeRow) throws -> String {
        let input =
            try db.fetchOne(String.self, sql: "SELECT payload FROM jobq_jobs WHERE id = ?", arguments: [job.id])
            ?? "null"
        let how = job.state == .dead ? "died" : "was cancelled"
        return "node \(node.path) (job \(job.id), input \(JSONText.preview(input))) \(how)"
            + (job.error.map { ": \($0)" } ?? "")
    }

    /// Creates the jobs of each child node from a succeeded job's result, in its group.
    private static func expand(
        _ db: some SQLTransaction, _ job: FinishedJob, node: TreeNodeRow, group: Int64, nodes: inout TreeNodeCache,
        work: inout [FinishedJob]
    ) throws {
        let events = db.events
        guard let workflow = job.workflowID,
            let parent = try db.fetchRow(
                sql:
                    "SELECT j.result, g.path, g.total FROM jobq_jobs j JOIN jobq_workflow_groups g ON g.id = ? WHERE j.id = ?",
                arguments: [group, job.id])
        else { return }
        let result: String = parent["result"] ?? "null"
        let path: String = parent["path"]
        var position: Int = parent["total"]
        let start = position
        var inserter = TreeJobInserter(db: db, workflow: workflow, now: events.now)
        for child in try nodes.children(db, of: node.id) {
            let inputs: [String]
            do {
                inputs = try childInputs(result: result, child: child, parentJob: job.id)
            } catch let failure as TreeExpansionFailure {
                work.append(
                    try inserter.insertFailed(
                        child, message: failure.message, parentJob: job.id, group: group, position: position,
                        path: "\(path)/\(child.name)"))
                position += 1
                continue
            }
            if inputs.isEmpty { continue }
            if let over = try reserve(db, tree: child.treeID, jobs: inputs.count) {
                let message =
                    "its fan-out of \(inputs.count) jobs from job \(job.id) would bring the tree to \(over.jobs + inputs.count) jobs, "
                    + "over its limit of \(over.max); raise the tree's maxJobs if that many are meant"
                work.append(
                    try inserter.insertFailed(
                        child, message: message, parentJob: job.id, group: group, position: position,
                        path: "\(path)/\(child.name)"))
                position += 1
                continue
            }
            for (index, input) in inputs.enumerated() {
                try inserter.insert(
                    child, payload: input, group: group, position: position, path: "\(path)/\(child.name)[\(index)]")
                position += 1
            }
        }
        if position > start {
            try db.execute(
                sql: "UPDATE jobq_workflow_groups SET total = total + ? WHERE id = ?",
                arguments: [position - start, group])
        }
    }

    private enum TreeBudget: Int32, SQLParameter {
        case jobs = 1
        case tree
    }

    private static let reserveSQL = """
        UPDATE jobq_trees SET jobs = jobs + \(TreeBudget.jobs)
        WHERE id = \(TreeBudget.tree) AND jobs + \(TreeBudget.jobs) <= max_jobs
        """

    /// Counts `jobs` more into the tree's budget; nil when they fit, else the tree's count and limit.
    private static func reserve(_ db: some SQLTransaction, tree: Int64, jobs: Int) throws -> (jobs: Int, max: Int)? {
        let statement = try db.statement(sql: reserveSQL)
        statement.bind(TreeBudget.jobs, jobs)
        statement.bind(TreeBudget.tree, tree)
        try statement.run()
        if db.changesCount == 1 { return nil }
        let row = try db.fetchRow(sql: "SELECT jobs, max_jobs FROM jobq_trees WHERE id = ?", arguments: [tree])
        return (row?["jobs"] ?? 0, row?["max_jobs"] ?? 0)
    }

    /// The inputs of a child node's jobs, as JSON text: the parent's whole result, or each
    /// element of the array its `each` points at; `with` merged into each.
    private static func childInputs(result: String, child: TreeNodeRow, parentJob: JobID) throws -> [String] {
        var values: [OrderedJSON]
        let document: OrderedJSON
        do {
            document = try OrderedJSON.parse(result)
        } catch {
            throw TreeExpansionFailure(message: "the result of job \(parentJob) is not JSON (\(error))")
        }
        if let each = child.each {
            let pointer: JSONPointer
            do {
                pointer = try JSONPointer(each)
            } catch {
                throw TreeExpansionFailure(message: "'each': \(error.description)")
            }
            guard let found = document.value(at: pointer.tokens) else {
                throw TreeExpansionFailure(
                    message: "'each' \(JSONText.string(each)) points at nothing in the result of job \(parentJob)")
            }
            guard case .array(let elements) = found else {
                throw TreeExpansionFailure(
                    message:
                        "'each' \(JSONText.string(each)) points at a value of type \(found.typeName) in the result of job \(parentJob), "
                        + "not at an array")
            }
            values = elements
        } else {
            values = [document]
        }
        if let with = child.withObject, let patch = try? OrderedJSON.parse(with) {
            values = values.map { value in
                let base: OrderedJSON =
                    if case .object = value { value } else {
                        .object([.init(rawKey: "\"input\"", key: "input", value: value)])
                    }
                return base.patched(with: patch)
            }
        }
        return values.map(\.text)
    }
}

/// Why a child node could not get its jobs from its parent's result.
package struct TreeExpansionFailure: Error {
    let message: String
}

extension StoreSQL {
    /// The parameters of a tree's ready job.
    enum TreeJob: Int32, SQLParameter {
        case queue = 1
        case executor, payload, priority, maxAttempts, now, timeout, name, workflow, group, position, node
        case enqueuedData
    }

    static let treeJobSQL = DialectSQL { d in
        typealias P = TreeJob
        return jobInsertSQL(
            d,
            [
                "queue": "\(P.queue)", "executor": "\(P.executor)", "payload": "\(P.payload)",
                "priority": "\(P.priority)", "state": "'ready'", "max_attempts": "\(P.maxAttempts)",
                "run_at": "\(P.now)", "timeout": "\(P.timeout)", "created_at": "\(P.now)", "name": "\(P.name)",
                "workflow_id": "\(P.workflow)", "group_id": "\(P.group)", "group_position": "\(P.position)",
                "tree_node": "\(P.node)"
            ], enqueuedData: P.enqueuedData, returning: "id")
    }

    /// The parameters of the group around the job of a node with children.
    enum TreeGroup: Int32, SQLParameter {
        case workflow = 1
        case parent, position, name, path, node
    }

    static let treeGroupSQL: String = {
        typealias P = TreeGroup
        return insertSQL(
            "jobq_workflow_groups",
            [
                "workflow_id": "\(P.workflow)", "parent_id": "\(P.parent)", "position": "\(P.position)",
                "kind": "'tree'", "name": "\(P.name)", "path": "\(P.path)", "on_failure": "'continue'",
                "state": "'running'", "total": "1", "tree_node": "\(P.node)"
            ], returning: "id")
    }()
}

/// Inserts the jobs (and, for nodes with children, their groups) that a success creates.
package struct TreeJobInserter<Transaction: SQLTransaction> {
    let db: Transaction
    let workflow: WorkflowID
    let now: Double
    /// The `enqueued` event's data by priority: the same for every job one success creates.
    private var enqueuedData: [Int: RenderedEventData] = [:]

    init(db: Transaction, workflow: WorkflowID, now: Double) {
        self.db = db
        self.workflow = workflow
        self.now = now
    }

    /// A ready job of `node` with `payload`, in `group` at `position`; a node with children
    /// gets a group of its own around the job, at that position instead.
    mutating func insert(
        _ node: TreeNodeRow, payload: String, group: Int64, position: Int, path: String
    ) throws {
        let (jobGroup, jobPosition) = try place(node, group: group, position: position, path: path)
        typealias P = StoreSQL.TreeJob
        let statement = try db.statement(sql: StoreSQL.treeJobSQL[db.dialect])
        let event = StoreSQL.NewJobEvent(
            enqueuedData[node.priority]
                ?? {
                    let data = EventData.enqueued(state: .ready, runAt: now, priority: node.priority).rendered
                    enqueuedData[node.priority] = data
                    return data
                }(), db.dialect)
        statement.bind(P.queue, node.queue)
        statement.bind(P.executor, node.executor)
        statement.bind(P.payload, payload)
        statement.bind(P.priority, node.priority)
        statement.bind(P.maxAttempts, node.maxAttempts)
        statement.bind(P.now, now)
        statement.bind(P.timeout, node.timeout)
        statement.bind(P.name, node.name)
        statement.bind(P.workflow, workflow)
        statement.bind(P.group, jobGroup)
        statement.bind(P.position, Int64(jobPosition))
        statement.bind(P.node, node.id)
        event.bind(to: statement, at: P.enqueuedData)
        guard try statement.step() else { throw JobQueueError.storeUnavailable("inserting a tree job returned no row") }
        let id = statement.int64(0)
        statement.reset()
        event.append(
            to: db, at: now, job: id, queue: node.queue, executor: node.executor, batch: nil, workflow: workflow)
    }

    /// A job of `node` that is dead from the start, carrying why its inputs could not be made:
    /// the node's failure, handled by its policy like any other.
    mutating func insertFailed(
        _ node: TreeNodeRow, message: String, parentJob: JobID, group: Int64, position: Int, path: String
    ) throws -> FinishedJob {
        let events = db.events
        let (jobGroup, jobPosition) = try place(node, group: group, position: position, path: path)
        var payload = JSONObjectBuilder()
        payload.add("parentJob", int: Int(parentJob))
        payload.add("each", string: node.each)
        typealias P = InsertDeadTreeJob
        let statement = try db.statement(sql: InsertDeadTreeJob.sql[db.dialect])
        let event = StoreSQL.NewJobEvent(EventData.enqueued(state: .dead).rendered, db.dialect)
        statement.bind(P.queue, node.queue)
        statement.bind(P.executor, node.executor)
        statement.bind(P.payload, payload.text)
        statement.bind(P.priority, node.priority)
        statement.bind(P.maxAttempts, node.maxAttempts)
        statement.bind(P.now, now)
        statement.bind(P.timeout, node.timeout)
        statement.bind(P.name, node.name)
        statement.bind(P.error, message)
        statement.bind(P.workflow, workflow)
        statement.bind(P.group, jobGroup)
        statement.bind(P.position, Int64(jobPosition))
        statement.bind(P.node, node.id)
        event.bind(to: statement, at: P.enqueuedData)
        guard try statement.step() else { throw JobQueueError.storeUnavailable("inserting a tree job returned no row") }
        let id = statement.int64(0)
        statement.reset()
        event.append(
            to: db, at: now, job: id, queue: node.queue, executor: node.executor, batch: nil, workflow: workflow)
        events.append(
            .dead(attempt: 0, error: message), job: id, queue: node.queue, executor: node.executor, batch: nil,
            workflow: workflow)
        return FinishedJob(
            id: id, queue: node.queue, executor: node.executor, batch: nil, workflowID: workflow, groupID: jobGroup,
            lane: nil,
            treeNode: node.id, state: .dead, error: message)
    }

    /// The group and position of a new job: its own group (created here) for a node with
    /// children, else the parent's group.
    private func place(_ node: TreeNodeRow, group: Int64, position: Int, path: String) throws -> (
        group: Int64, position: Int
    ) {
        guard !node.leaf else { return (group, position) }
        typealias P = StoreSQL.TreeGroup
        let statement = try db.statement(sql: StoreSQL.treeGroupSQL)
        statement.bind(P.workflow, workflow)
        statement.bind(P.parent, group)
        statement.bind(P.position, Int64(position))
        statement.bind(P.name, node.name)
        statement.bind(P.path, path)
        statement.bind(P.node, node.id)
        guard try statement.step() else {
            throw JobQueueError.storeUnavailable("inserting a tree group returned no row")
        }
        let id = statement.int64(0)
        statement.reset()
        return (id, 0)
    }
}

// MARK: Completion

extension StoreSQL {
    /// Writes the `subtree` event of a tree group that finished (a job and everything below it),
    /// and for the tree's root group the `tree` event, exactly once, in the transaction of the
    /// last job below.
    static func treeGroupFinished(
        _ db: some SQLTransaction, _ group: Int64, node: Int64, workflow: WorkflowID, path: String,
        outcome: GroupOutcome, jobs: SubtreeJobs?,
        failures: String?, error: String?
    ) throws {
        let events = db.events
        guard
            let row = try db.fetchRow(
                sql: "SELECT path, parent_id, tree_id FROM jobq_tree_nodes WHERE id = ?", arguments: [node])
        else { return }
        let job = try db.fetchOne(
            JobID.self, sql: "SELECT id FROM jobq_jobs WHERE group_id = ? AND group_position = 0", arguments: [group])
        // A subtree cancelled from above (jobs nil) is not counted: its tree's event counts all.
        events.append(
            .subtree(
                group: group, node: row["path"], path: path, job: job, state: outcome.rawValue, rawCounts: jobs?.json,
                rawFailures: failures, error: error),
            job: job, queue: nil, executor: nil, batch: nil, workflow: workflow)
        guard row["parent_id"] as Int64? == nil else { return }
        let jobs = try jobs ?? subtreeJobs(db, group: group)

        let failures = jobs.failed + jobs.cancelled > 0 ? try treeFailuresJSON(db, group: group) : nil
        events.append(
            .tree(
                tree: row["tree_id"], group: group, node: row["path"], path: path, job: job, state: outcome.rawValue,
                rawCounts: jobs.json, rawFailures: failures, error: error),
            job: job, queue: nil, executor: nil, batch: nil, workflow: workflow)
    }

    /// The jobs of a tree that died or were cancelled (dead ones first, at most 50), as a JSON
    /// array of `{"job", "node", "state", "error"}`.
    private static func treeFailuresJSON(_ db: some SQLTransaction, group: Int64) throws -> String {
        let rows = try db.fetchRows(
            sql: """
                \(subtreeCTE)
                SELECT j.id, n.path, j.state, j.error
                FROM jobq_jobs j JOIN jobq_tree_nodes n ON n.id = j.tree_node
                WHERE j.group_id IN (SELECT id FROM subtree) AND j.state IN ('dead', 'cancelled')
                ORDER BY CASE WHEN j.state = 'cancelled' THEN 1 ELSE 0 END, j.id LIMIT 50
                """,
            arguments: [group])
        return jsonArray(
            raw: rows.map { row in
                var item = JSONObjectBuilder()
                item.add("job", int: row["id"])
                item.add("node", string: row["path"])
                item.add("state", string: row["state"])
                item.add("error", raw: (row["error"] as String?).map(JSONText.string) ?? "null")
                return item.text
            })
    }
}

/// A tree's group in its workflow.
private enum InsertTreeGroup: Int32, SQLParameter, CaseIterable {
    case workflow = 1
    case parent, position, name, path, root
}

/// A node of a tree.
private enum InsertTreeNode: Int32, SQLParameter, CaseIterable {
    case tree = 1
    case parent, position, name, path, executor, each, withObject, onFailure, queue, priority, maxAttempts, timeout,
        leaf
}

/// A tree's job that is dead from the start.
private enum InsertDeadTreeJob: Int32, SQLParameter {
    case queue = 1
    case executor, payload, priority, maxAttempts, now, timeout, name, error, workflow, group, position, node
    case enqueuedData

    static let sql = DialectSQL { d in
        typealias P = InsertDeadTreeJob
        return StoreSQL.jobInsertSQL(
            d,
            [
                "queue": "\(P.queue)", "executor": "\(P.executor)", "payload": "\(P.payload)",
                "priority": "\(P.priority)", "state": "'dead'", "max_attempts": "\(P.maxAttempts)",
                "run_at": "\(P.now)", "timeout": "\(P.timeout)", "created_at": "\(P.now)", "finished_at": "\(P.now)",
                "name": "\(P.name)", "error": "\(P.error)", "workflow_id": "\(P.workflow)", "group_id": "\(P.group)",
                "group_position": "\(P.position)", "tree_node": "\(P.node)"
            ], enqueuedData: P.enqueuedData, returning: "id")
    }
}
