import Foundation

/// A workflow's identifier: monotonic, never reused within a store.
public typealias WorkflowID = Int64

/// Work composed of steps in nested sequence and parallel groups, with a shared context,
/// submitted in one transaction with ``JobQueue/submit(_:)`` and run by any number of worker
/// processes.
///
/// Each step is a job; the ordering is stored as dependencies, so the workflow advances in the
/// transactions that finish its steps and survives a `kill -9` of any process.
///
/// ```swift
/// let nightly = try Workflow(name: "nightly", context: ["region": "eu"]) {
///     try WorkflowStep(Fetch.self, .init(day: today))
///     try WorkflowGroup.parallel {
///         try WorkflowStep(Resize.self, .init(size: 256))
///         try WorkflowStep(Resize.self, .init(size: 1024))
///     }
///     try WorkflowStep(Publish.self, .init(), input: .previous)   // gets both resizes' results
/// }
/// let id = try await queue.submit(nightly)
/// ```
///
/// Several members at the top form a sequence; a single group is the top itself.
public struct Workflow: Sendable, Hashable {
    public var name: String?
    /// The initial shared context, which ``JobContext/shared`` reads and
    /// ``JobContext/setShared(_:_:)`` writes.
    public var context: [String: JSONValue]
    /// The top group.
    public var root: WorkflowGroup

    public init(name: String? = nil, context: [String: JSONValue] = [:], root: WorkflowGroup) {
        self.name = name
        self.context = context
        self.root = root
    }

    public init(
        name: String? = nil, context: [String: JSONValue] = [:], @WorkflowBuilder _ members: () throws -> [WorkflowNode]
    ) rethrows {
        let nodes = try members()
        if nodes.count == 1, case .group(let group) = nodes[0] {
            self.init(name: name, context: context, root: group)
        } else {
            self.init(name: name, context: context, root: WorkflowGroup(.sequence, nodes))
        }
    }
}

/// A member of a group: a step (one job), a nested group, or a job tree.
public indirect enum WorkflowNode: Sendable, Hashable {
    case step(WorkflowStep)
    case group(WorkflowGroup)
    case tree(JobTree)
}

/// A sequence (members one after another) or a parallel group (members at once).
public struct WorkflowGroup: Sendable, Hashable {
    public enum Kind: String, Sendable, Hashable, Codable {
        case sequence
        case parallel
    }

    /// What a member that dies or is cancelled does to its group.
    public enum FailurePolicy: String, Sendable, Hashable, Codable {
        /// The group fails: members not started are dropped, running ones cancelled, and the
        /// failure goes up to the enclosing group (by default failing the whole workflow).
        case fail
        /// The other members run on; the group ends `succeeded` with the failure counted in its
        /// `group` event, and what follows it runs.
        case `continue`
    }

    public var kind: Kind
    public var members: [WorkflowNode]
    public var onFailure: FailurePolicy
    /// A name to find the group by (`jobq workflow cancel ID --group NAME`).
    public var name: String?

    public init(_ kind: Kind, _ members: [WorkflowNode], onFailure: FailurePolicy = .fail, name: String? = nil) {
        self.kind = kind
        self.members = members
        self.onFailure = onFailure
        self.name = name
    }
}

/// One job of a workflow.
public struct WorkflowStep: Sendable, Hashable {
    /// Where a step's input comes from, besides its payload.
    public enum Input: String, Sendable, Hashable, Codable {
        /// The payload alone.
        case payload
        /// The payload with the previous member's result merged in under `"previous"` (for a
        /// parallel group: the array of its members' results, in order; for a sequence: its
        /// last member's result). Only for a sequence member that has a previous member.
        case previous
    }

    public var request: JobRequest
    public var input: Input

    public init(_ request: JobRequest, input: Input = .payload) {
        self.request = request
        self.input = input
    }
}

// MARK: Building workflows in code

/// Anything that can stand in a workflow builder: a ``WorkflowStep``, a ``WorkflowGroup``
/// (``WorkflowGroup/sequence(name:onFailure:_:)``, ``WorkflowGroup/parallel(name:onFailure:_:)``),
/// a ``JobTree``.
///
/// The builder uses the model's own types rather than short names of its own (`Step`,
/// `Parallel`), which would clash with types of those names in apps and other libraries.
public protocol WorkflowComponent: Sendable {
    var node: WorkflowNode { get }
}

extension WorkflowStep: WorkflowComponent {
    public var node: WorkflowNode { .step(self) }

    /// A step running `executor` with `input` as its payload.
    ///
    /// ```swift
    /// try WorkflowStep(Sum.self, .init(a: 1, b: 2), options: .init(queue: "math"))
    /// ```
    public init<E: Executor>(
        _ executor: E.Type, _ input: E.Input, options: JobOptions = .init(), input source: Input = .payload
    ) throws {
        self.init(try JobRequest(executor, input, options: options), input: source)
    }

    /// A step running the executor registered under `executor`, with a JSON payload.
    ///
    /// ```swift
    /// try WorkflowStep(executor: "echo", payloadJSON: #"{"note":"done"}"#, input: .previous)
    /// ```
    public init(
        executor: String, payloadJSON: String = "{}", options: JobOptions = .init(), input source: Input = .payload
    ) throws {
        self.init(try JobRequest(executor: executor, payloadJSON: payloadJSON, options: options), input: source)
    }
}

extension WorkflowGroup: WorkflowComponent {
    public var node: WorkflowNode { .group(self) }

    /// A sequence: its members run one after another.
    ///
    /// ```swift
    /// try WorkflowGroup.sequence(name: "publish") {
    ///     try WorkflowStep(Render.self, .init())
    ///     try WorkflowStep(Upload.self, .init(), input: .previous)
    /// }
    /// ```
    public static func sequence(
        name: String? = nil, onFailure: FailurePolicy = .fail, @WorkflowBuilder _ members: () throws -> [WorkflowNode]
    ) rethrows -> WorkflowGroup {
        WorkflowGroup(.sequence, try members(), onFailure: onFailure, name: name)
    }

    /// A parallel group: its members run at once.
    ///
    /// ```swift
    /// try WorkflowGroup.parallel(onFailure: .continue) {
    ///     for size in [256, 1024] { try WorkflowStep(Resize.self, .init(size: size)) }
    /// }
    /// ```
    public static func parallel(
        name: String? = nil, onFailure: FailurePolicy = .fail, @WorkflowBuilder _ members: () throws -> [WorkflowNode]
    ) rethrows -> WorkflowGroup {
        WorkflowGroup(.parallel, try members(), onFailure: onFailure, name: name)
    }
}

/// Collects the members of a workflow group; `for` loops and `if` work inside it.
@resultBuilder
public enum WorkflowBuilder {
    public static func buildExpression(_ component: some WorkflowComponent) -> [WorkflowNode] { [component.node] }
    public static func buildExpression(_ node: WorkflowNode) -> [WorkflowNode] { [node] }
    public static func buildBlock(_ parts: [WorkflowNode]...) -> [WorkflowNode] { parts.flatMap { $0 } }
    public static func buildArray(_ parts: [[WorkflowNode]]) -> [WorkflowNode] { parts.flatMap { $0 } }
    public static func buildOptional(_ part: [WorkflowNode]?) -> [WorkflowNode] { part ?? [] }
    public static func buildEither(first part: [WorkflowNode]) -> [WorkflowNode] { part }
    public static func buildEither(second part: [WorkflowNode]) -> [WorkflowNode] { part }
}
