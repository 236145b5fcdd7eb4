import Foundation

/// Where a workflow, or one of its groups, is in its life.
public enum WorkflowState: String, Sendable, Hashable, CaseIterable, Codable {
    case running
    /// Every step succeeded, or the failures were contained by `continue` groups.
    case succeeded
    /// A step died and its failure reached the top.
    case failed
    case cancelled

    public var isFinal: Bool { self != .running }

    /// Parses a state name as users type it, with an error that lists the valid names.
    public init(parsing text: String) throws(JobQueueError) {
        guard let state = WorkflowState(rawValue: text.lowercased()) else {
            throw .invalidInput(
                "unknown workflow state '\(text)'; valid states are: "
                    + WorkflowState.allCases.map(\.rawValue).joined(separator: ", "))
        }
        self = state
    }
}

/// A workflow as stored: its state, shared context, and its groups with every step's job.
///
/// ```swift
/// let status = try await queue.workflow(id)
/// print(status?.state, status?.root.counts.succeeded)
/// ```
public struct WorkflowStatus: Sendable, Hashable {
    public var id: WorkflowID
    public var name: String?
    public var state: WorkflowState
    /// The shared context as it is now, as JSON text (an object).
    public var contextJSON: String
    /// Why it failed or was cancelled.
    public var error: String?
    public var createdAt: Date
    public var finishedAt: Date?
    public var root: Group
    /// The job trees among its members, with their nodes.
    public var trees: [TreeStatus]

    /// What a group is: a sequence or parallel group as submitted, or a job of a tree with
    /// what its success created (the tree itself, for the root's).
    public enum GroupKind: String, Sendable, Hashable, Codable {
        case sequence
        case parallel
        case tree
    }

    /// One group, its counters and its members in order.
    public struct Group: Sendable, Hashable {
        public var id: Int64
        public var kind: GroupKind
        /// For a tree group: the node (in ``TreeStatus/nodes``) its first member is a job of.
        public var treeNode: Int64?
        public var name: String?
        /// Where it sits in the submission, e.g. `$.sequence[4]` (the top group is `$`).
        public var path: String
        public var onFailure: WorkflowGroup.FailurePolicy
        public var state: WorkflowState
        public var counts: Counts
        public var finishedAt: Date?
        public var members: [Member]

        package init(
            id: Int64, kind: GroupKind, treeNode: Int64? = nil, name: String? = nil, path: String,
            onFailure: WorkflowGroup.FailurePolicy, state: WorkflowState, counts: Counts, finishedAt: Date? = nil,
            members: [Member]
        ) {
            self.id = id
            self.kind = kind
            self.treeNode = treeNode
            self.name = name
            self.path = path
            self.onFailure = onFailure
            self.state = state
            self.counts = counts
            self.finishedAt = finishedAt
            self.members = members
        }
    }

    /// A group's members by how they ended (direct members: jobs and groups).
    public struct Counts: Sendable, Hashable, Codable {
        public var total: Int
        public var succeeded: Int
        public var failed: Int
        public var cancelled: Int

        package init(total: Int, succeeded: Int, failed: Int, cancelled: Int) {
            self.total = total
            self.succeeded = succeeded
            self.failed = failed
            self.cancelled = cancelled
        }
    }

    public indirect enum Member: Sendable, Hashable {
        case job(Job)
        case group(Group)
    }

    /// The context decoded.
    public var context: [String: JSONValue] {
        guard case .object(let object)? = try? JSONDecoder.jobq.decode(JSONValue.self, from: Data(contextJSON.utf8))
        else { return [:] }
        return object
    }

    /// Every step's job, depth first in submission order.
    public var jobs: [Job] {
        func collect(_ group: Group) -> [Job] {
            group.members.flatMap { member -> [Job] in
                switch member {
                case .job(let job): [job]
                case .group(let child): collect(child)
                }
            }
        }
        return collect(root)
    }

    package init(
        id: WorkflowID, name: String? = nil, state: WorkflowState, contextJSON: String, error: String? = nil,
        createdAt: Date, finishedAt: Date? = nil, root: Group, trees: [TreeStatus]
    ) {
        self.id = id
        self.name = name
        self.state = state
        self.contextJSON = contextJSON
        self.error = error
        self.createdAt = createdAt
        self.finishedAt = finishedAt
        self.root = root
        self.trees = trees
    }
}

/// A line of `jobq workflow list`.
public struct WorkflowSummary: Sendable, Hashable {
    public var id: WorkflowID
    public var name: String?
    public var state: WorkflowState
    /// Its steps by job state.
    public var stepCounts: [String: Int]
    public var error: String?
    public var createdAt: Date
    public var finishedAt: Date?

    package init(
        id: WorkflowID, name: String? = nil, state: WorkflowState, stepCounts: [String: Int], error: String? = nil,
        createdAt: Date, finishedAt: Date? = nil
    ) {
        self.id = id
        self.name = name
        self.state = state
        self.stepCounts = stepCounts
        self.error = error
        self.createdAt = createdAt
        self.finishedAt = finishedAt
    }
}

extension WorkflowStatus {
    /// The workflow as one JSON object: `id`, `name`, `state`, `context`, `error`, `createdAt`,
    /// `finishedAt`, `root`, a group: `id`, `kind` (`sequence`, `parallel`, `tree`),
    /// `treeNode`, `name`, `path`, `onFailure`, `state`, `counts`, `members` (each
    /// `{"job": <a job as in jobq show --json>}` or `{"group": ...}`), and `trees` (see
    /// ``TreeStatus/json``).
    public var json: String {
        func render(_ group: Group) -> String {
            var object = JSONObjectBuilder()
            object.add("id", int: Int(group.id))
            object.add("kind", string: group.kind.rawValue)
            if let node = group.treeNode { object.add("treeNode", int: Int(node)) }
            object.add("name", raw: group.name.map(JSONText.string) ?? "null")
            object.add("path", string: group.path)
            object.add("onFailure", string: group.onFailure.rawValue)
            object.add("state", string: group.state.rawValue)
            let counts = group.counts
            object.add(
                "counts",
                raw:
                    "{\"total\":\(counts.total),\"succeeded\":\(counts.succeeded),\"failed\":\(counts.failed),\"cancelled\":\(counts.cancelled)}"
            )
            object.add("finishedAt", raw: group.finishedAt.map { JSONText.string(ISO8601.string($0)) } ?? "null")
            let members = group.members.map { member -> String in
                switch member {
                case .job(let job): "{\"job\":\(job.jsonLine)}"
                case .group(let child): "{\"group\":\(render(child))}"
                }
            }
            object.add("members", raw: "[" + members.joined(separator: ",") + "]")
            return object.text
        }
        var object = JSONObjectBuilder()
        object.add("id", int: Int(id))
        object.add("name", raw: name.map(JSONText.string) ?? "null")
        object.add("state", string: state.rawValue)
        object.add("context", raw: contextJSON)
        object.add("error", raw: error.map(JSONText.string) ?? "null")
        object.add("createdAt", string: ISO8601.string(createdAt))
        object.add("finishedAt", raw: finishedAt.map { JSONText.string(ISO8601.string($0)) } ?? "null")
        object.add("root", raw: render(root))
        object.add("trees", raw: "[" + trees.map(\.json).joined(separator: ",") + "]")
        return object.text
    }
}

extension WorkflowSummary {
    /// One line of JSON: `id`, `name`, `state`, `steps` (counts by job state), `error`,
    /// `createdAt`, `finishedAt`.
    public var jsonLine: String {
        var object = JSONObjectBuilder()
        object.add("id", int: Int(id))
        object.add("name", raw: name.map(JSONText.string) ?? "null")
        object.add("state", string: state.rawValue)
        object.add(
            "steps",
            raw: "{"
                + stepCounts.sorted { $0.key < $1.key }.map { "\(JSONText.string($0.key)):\($0.value)" }.joined(
                    separator: ",") + "}")
        object.add("error", raw: error.map(JSONText.string) ?? "null")
        object.add("createdAt", string: ISO8601.string(createdAt))
        object.add("finishedAt", raw: finishedAt.map { JSONText.string(ISO8601.string($0)) } ?? "null")
        return object.text
    }
}
