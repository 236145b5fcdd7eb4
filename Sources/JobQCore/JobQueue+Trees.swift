import Foundation

extension JobQueue {
    // MARK: Job trees

    /// Submits a job tree as a workflow of its own, the root running on `input`; returns the
    /// workflow's id (``workflow(_:)`` shows it, ``cancelWorkflow(_:group:)`` cancels it).
    ///
    /// ```swift
    /// let tree = TreeNode(Cookbook.self) {
    ///     TreeNode(Recipe.self, each: "/recipeIDs") {
    ///         TreeNode(RecipeImage.self, each: "/imageIDs")
    ///     }
    /// }
    /// let id = try await queue.submit(tree, input: "a-cookbook")
    /// ```
    ///
    /// - Throws: ``JobQueueError/invalidInput(_:)`` naming the bad node; nothing is stored then.
    @discardableResult
    public func submit(
        _ tree: TreeNode, input: some Encodable & Sendable, name: String? = nil, maxJobs: Int = JobTree.defaultMaxJobs
    ) async throws -> WorkflowID {
        try await submit(try Self.workflow(of: tree, input: input, name: name, maxJobs: maxJobs))
    }

    /// A tree is submitted as a workflow of one step, the tree.
    package static func workflow(
        of tree: TreeNode, input: some Encodable & Sendable, name: String?, maxJobs: Int
    ) throws -> Workflow {
        Workflow(name: name, root: WorkflowGroup(.sequence, [.tree(try JobTree(tree, input: input, maxJobs: maxJobs))]))
    }

    /// Submits a job tree and calls `handlers` as its subtrees and the tree finish, whichever
    /// process runs the jobs: ``TreeHandlers/onSubtree`` for each job whose subtree completed
    /// (a recipe with its images and ingredients, say), ``TreeHandlers/onFinish`` once.
    @discardableResult
    public func submit(
        _ tree: TreeNode, input: some Encodable & Sendable, name: String? = nil, maxJobs: Int = JobTree.defaultMaxJobs,
        handlers: TreeHandlers
    ) async throws -> WorkflowID {
        let cursor = try await store.latestEventID()
        let id = try await submit(tree, input: input, name: name, maxJobs: maxJobs)
        let feed = events(EventFilter(workflow: id, kinds: [.subtree, .tree]), since: cursor)
        Task {
            for try await event in feed {
                guard
                    let finish = try event.data(as: SubtreeFinish.Fields.self).map({
                        SubtreeFinish(event: event, fields: $0)
                    })
                else { continue }
                if event.kind == .subtree {
                    handlers.onSubtree?(finish)
                } else {
                    handlers.onFinish?(finish)
                    return
                }
            }
        }
        return id
    }
}

/// Callbacks for one job tree, fed by the event feed.
///
/// ```swift
/// try await queue.submit(cookbook, input: "a-cookbook", handlers: TreeHandlers(
///     onSubtree: { done in if done.node == "cookbook/recipe" { show(recipe: done.jobID) } },
///     onFinish: { tree in print("cookbook", tree.state) }))
/// ```
public struct TreeHandlers: Sendable {
    /// Each job of a node with children whose subtree completed, post-order (the root's too).
    public var onSubtree: (@Sendable (SubtreeFinish) -> Void)?
    /// Once, when the tree finished.
    public var onFinish: (@Sendable (SubtreeFinish) -> Void)?

    public init(
        onSubtree: (@Sendable (SubtreeFinish) -> Void)? = nil, onFinish: (@Sendable (SubtreeFinish) -> Void)? = nil
    ) {
        self.onSubtree = onSubtree
        self.onFinish = onFinish
    }
}

/// A subtree (a job and everything below it) or a whole tree that finished.
public struct SubtreeFinish: Sendable, Hashable {
    /// The node's path of names, e.g. `cookbook/recipe`.
    public var node: String
    /// The job at the top of the subtree.
    public var jobID: JobID?
    public var state: WorkflowState
    /// The subtree's jobs by outcome.
    public var succeeded: Int
    public var failed: Int
    public var cancelled: Int
    public var error: String?
    /// The event it came from (its data has the failures).
    public var event: JobEvent

    struct Fields: Decodable {
        struct Counts: Decodable {
            var succeeded: Int
            var failed: Int
            var cancelled: Int
        }
        var node: String
        var job: JobID?
        var state: WorkflowState
        var counts: Counts?
        var error: String?
    }

    init(event: JobEvent, fields: Fields) {
        node = fields.node
        jobID = fields.job
        state = fields.state
        succeeded = fields.counts?.succeeded ?? 0
        failed = fields.counts?.failed ?? 0
        cancelled = fields.counts?.cancelled ?? 0
        error = fields.error
        self.event = event
    }
}
