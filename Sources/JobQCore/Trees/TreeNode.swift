import Foundation

/// A node of a job tree: an executor, how its jobs get their inputs from the parent's result,
/// and its child nodes (DRBOperationTree's tree of operations, durable).
///
/// The root runs once, on the tree's input. When one of a node's jobs succeeds, each child node
/// receives its result: by default the whole result becomes the input of one job of the child;
/// with `each` (a JSON Pointer) the value there must be an array, and each element becomes the
/// input of one job (an empty array: no jobs, and that branch is complete at once). `with` is
/// merged into every input (an input that is not an object is wrapped as `{"input": value}`
/// first). The children are created in the transaction that records the parent's success.
///
/// ```swift
/// let cookbook = TreeNode(Cookbook.self) {
///     TreeNode(Recipe.self, each: "/recipeIDs") {
///         TreeNode(RecipeImage.self, each: "/imageIDs")
///         TreeNode(Ingredient.self, each: "/ingredientIDs") {
///             TreeNode(IngredientImage.self, each: "/imageIDs")
///         }
///     }
/// }
/// let id = try await queue.submit(cookbook, input: "a-cookbook")
/// ```
///
/// A job of a node with children completes when it succeeded and everything its success
/// created completed (post-order): a `subtree` event says so, with the counts below it. The
/// tree's `tree` event comes once, after its last leaf.
public struct TreeNode: Sendable, Hashable {
    /// What a job of this node that dies (or is cancelled) does to the tree. Retries apply
    /// first, as for any job.
    public enum FailurePolicy: String, Sendable, Hashable, Codable, CaseIterable {
        /// The tree fails: its running jobs are cancelled, jobs not started are cancelled
        /// without running, and the tree ends `failed` with an error naming the node, the job
        /// and its input.
        case failTree
        /// Only this job's subtree is skipped and counted as failed; the rest of the tree goes
        /// on, and the tree ends `succeeded` with the failures listed in its `tree` event.
        case `continue`
    }

    public var executor: String
    /// The node's name, unique among its siblings (default: the executor's name). Paths of
    /// nodes are their names from the root: `cookbook/recipe/ingredient`.
    public var name: String
    /// A JSON Pointer (RFC 6901) into the parent's result, e.g. `/recipeIDs` (`""` is the
    /// result itself): one job per element of the array there. nil: one job, on the whole
    /// result. Not for the root.
    public var each: String?
    /// A JSON object merged into each job's input.
    public var with: [String: JSONValue]?
    public var onFailure: FailurePolicy
    /// Queue, priority, attempts and timeout of the node's jobs (other options do not apply).
    public var options: JobOptions
    public var children: [TreeNode]

    public init(
        executor: String, name: String? = nil, each: String? = nil, with: [String: JSONValue]? = nil,
        onFailure: FailurePolicy = .failTree, options: JobOptions = .init(), children: [TreeNode] = []
    ) {
        self.executor = executor
        self.name = name ?? executor
        self.each = each
        self.with = with
        self.onFailure = onFailure
        self.options = options
        self.children = children
    }

    public init(
        executor: String, name: String? = nil, each: String? = nil, with: [String: JSONValue]? = nil,
        onFailure: FailurePolicy = .failTree, options: JobOptions = .init(),
        @TreeBuilder _ children: () throws -> [TreeNode]
    ) rethrows {
        self.init(
            executor: executor, name: name, each: each, with: with, onFailure: onFailure, options: options,
            children: try children())
    }

    public init<E: Executor>(
        _ executor: E.Type, name: String? = nil, each: String? = nil, with: [String: JSONValue]? = nil,
        onFailure: FailurePolicy = .failTree, options: JobOptions = .init()
    ) {
        var options = options
        if options.timeout == nil { options.timeout = E.timeout }
        self.init(
            executor: E.name, name: name, each: each, with: with, onFailure: onFailure, options: options, children: [])
    }

    public init<E: Executor>(
        _ executor: E.Type, name: String? = nil, each: String? = nil, with: [String: JSONValue]? = nil,
        onFailure: FailurePolicy = .failTree, options: JobOptions = .init(),
        @TreeBuilder _ children: () throws -> [TreeNode]
    ) rethrows {
        var options = options
        if options.timeout == nil { options.timeout = E.timeout }
        self.init(
            executor: E.name, name: name, each: each, with: with, onFailure: onFailure, options: options,
            children: try children())
    }

    /// How many nodes the tree from here holds.
    var nodeCount: Int { 1 + children.reduce(0) { $0 + $1.nodeCount } }
}

/// Collects the child nodes of a ``TreeNode``; `for` loops and `if` work inside it.
@resultBuilder
public enum TreeBuilder {
    public static func buildExpression(_ node: TreeNode) -> [TreeNode] { [node] }
    public static func buildBlock(_ parts: [TreeNode]...) -> [TreeNode] { parts.flatMap { $0 } }
    public static func buildArray(_ parts: [[TreeNode]]) -> [TreeNode] { parts.flatMap { $0 } }
    public static func buildOptional(_ part: [TreeNode]?) -> [TreeNode] { part ?? [] }
    public static func buildEither(first part: [TreeNode]) -> [TreeNode] { part }
    public static func buildEither(second part: [TreeNode]) -> [TreeNode] { part }
}

/// A tree with its input, as a member of a workflow (or a workflow of its own, through
/// ``JobQueue/submit(_:input:name:maxJobs:)``).
///
/// ```swift
/// let workflow = try Workflow(name: "import") {
///     try WorkflowStep(Login.self, .init())
///     try JobTree(cookbook, input: "a-cookbook")
///     try WorkflowStep(executor: "notify", payloadJSON: "{}")
/// }
/// ```
public struct JobTree: Sendable, Hashable, WorkflowComponent {
    /// The most jobs one tree creates unless told otherwise.
    public static let defaultMaxJobs = 100_000

    public var root: TreeNode
    /// The root job's input, as JSON text.
    public var inputJSON: String
    /// `.previous`: the previous member's result is merged into the root's input under
    /// `"previous"`, as for a step.
    public var input: WorkflowStep.Input
    /// The most jobs the tree may create (the root included); a fan-out that would pass it
    /// fails its node with an error saying so.
    public var maxJobs: Int

    public init(
        _ root: TreeNode, inputJSON: String = "{}", input: WorkflowStep.Input = .payload,
        maxJobs: Int = JobTree.defaultMaxJobs
    ) {
        self.root = root
        self.inputJSON = inputJSON
        self.input = input
        self.maxJobs = maxJobs
    }

    public init(_ root: TreeNode, input value: some Encodable & Sendable, maxJobs: Int = JobTree.defaultMaxJobs) throws
    {
        let data: Data
        do {
            data = try JSONEncoder.jobq.encode(value)
        } catch {
            throw JobQueueError.invalidInput("the tree's input cannot be encoded as JSON: \(error)")
        }
        self.init(root, inputJSON: String(decoding: data, as: UTF8.self), maxJobs: maxJobs)
    }

    public var node: WorkflowNode { .tree(self) }
}
