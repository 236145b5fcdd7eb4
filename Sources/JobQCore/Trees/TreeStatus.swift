import Foundation

/// A job tree of a workflow: its nodes with their jobs counted by state, and its budget.
///
/// ```swift
/// let status = try await queue.workflow(id)
/// for node in status?.trees.first?.nodes ?? [] {
///     print(node.path, node.jobs[.succeeded, default: 0], "of", node.jobCount)
/// }
/// ```
public struct TreeStatus: Sendable, Hashable {
    public var id: Int64
    /// The group of the root job, which stands for the whole tree in ``WorkflowStatus/root``.
    public var group: Int64
    public var maxJobs: Int
    /// Jobs created so far, the root included.
    public var jobsCreated: Int
    /// Root first, each node before its children.
    public var nodes: [Node]

    public struct Node: Sendable, Hashable {
        public var id: Int64
        public var parentID: Int64?
        public var name: String
        /// Node names from the root, e.g. `cookbook/recipe/ingredient`.
        public var path: String
        public var executor: String
        public var each: String?
        public var onFailure: TreeNode.FailurePolicy
        /// Its jobs by state.
        public var jobs: [JobState: Int]

        public var jobCount: Int { jobs.values.reduce(0, +) }
        /// How deep it sits: 0 for the root.
        public var depth: Int { path.split(separator: "/").count - 1 }

        package init(
            id: Int64, parentID: Int64? = nil, name: String, path: String, executor: String, each: String? = nil,
            onFailure: TreeNode.FailurePolicy, jobs: [JobState: Int]
        ) {
            self.id = id
            self.parentID = parentID
            self.name = name
            self.path = path
            self.executor = executor
            self.each = each
            self.onFailure = onFailure
            self.jobs = jobs
        }
    }

    /// `{"id", "group", "maxJobs", "jobsCreated", "nodes": [{"id", "parent", "name", "path",
    /// "executor", "each", "onFailure", "jobs": {state: count}}]}`
    public var json: String {
        var object = JSONObjectBuilder()
        object.add("id", int: Int(id))
        object.add("group", int: Int(group))
        object.add("maxJobs", int: maxJobs)
        object.add("jobsCreated", int: jobsCreated)
        let nodes = nodes.map { node -> String in
            var item = JSONObjectBuilder()
            item.add("id", int: Int(node.id))
            item.add("parent", raw: node.parentID.map { String($0) } ?? "null")
            item.add("name", string: node.name)
            item.add("path", string: node.path)
            item.add("executor", string: node.executor)
            item.add("each", raw: node.each.map(JSONText.string) ?? "null")
            item.add("onFailure", string: node.onFailure.rawValue)
            let counts = node.jobs.sorted { $0.key.rawValue < $1.key.rawValue }.map {
                "\(JSONText.string($0.key.rawValue)):\($0.value)"
            }
            item.add("jobs", raw: "{" + counts.joined(separator: ",") + "}")
            return item.text
        }
        object.add("nodes", raw: "[" + nodes.joined(separator: ",") + "]")
        return object.text
    }

    package init(id: Int64, group: Int64, maxJobs: Int, jobsCreated: Int, nodes: [Node]) {
        self.id = id
        self.group = group
        self.maxJobs = maxJobs
        self.jobsCreated = jobsCreated
        self.nodes = nodes
    }
}
