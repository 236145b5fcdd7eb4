import Foundation

extension JobQueue {
    // MARK: Workflows

    /// Stores a workflow in one transaction (every group, step and edge, or nothing) and
    /// returns its id. Steps with nothing before them are ready at once.
    ///
    /// ```swift
    /// let id = try await queue.submit(try Workflow(name: "nightly") {
    ///     try WorkflowStep(Sum.self, .init(a: 1, b: 2))
    ///     try WorkflowGroup.parallel {
    ///         try WorkflowStep(executor: "sleep", payloadJSON: #"{"seconds":1}"#)
    ///         try WorkflowStep(executor: "sleep", payloadJSON: #"{"seconds":1}"#)
    ///     }
    /// })
    /// ```
    ///
    /// - Throws: ``JobQueueError/invalidInput(_:)`` naming the path of a bad member
    ///   (`$.sequence[1].parallel[0]: ...`); nothing is stored then.
    @discardableResult
    public func submit(_ workflow: Workflow) async throws -> WorkflowID {
        let id = try await store.submit(workflow)
        wakeWorkers()
        return id
    }

    /// Submits a workflow and calls `handlers` as its steps, groups and the workflow finish.
    /// The callbacks are fed by the event feed, so they fire whichever process runs the steps.
    @discardableResult
    public func submit(_ workflow: Workflow, handlers: WorkflowHandlers) async throws -> WorkflowID {
        let cursor = try await store.latestEventID()
        let id = try await submit(workflow)
        let feed = events(
            EventFilter(workflow: id, kinds: [.succeeded, .dead, .cancelled, .group, .workflow]), since: cursor)
        let store = self.store
        Task {
            for try await event in feed {
                switch event.kind {
                case .succeeded, .dead, .cancelled:
                    guard let jobID = event.jobID else { continue }
                    let job = try await store.job(jobID)
                    struct Details: Decodable {
                        var error: String?
                        var reason: String?
                    }
                    let details = try? event.data(as: Details.self)
                    let state: JobState =
                        event.kind == .succeeded ? .succeeded : (event.kind == .dead ? .dead : .cancelled)
                    handlers.onStepFinish?(
                        JobFinish(
                            jobID: jobID, state: state, resultJSON: job?.resultJSON,
                            error: details?.error ?? details?.reason))
                case .group:
                    handlers.onGroupFinish?(event)
                case .workflow:
                    struct Details: Decodable {
                        var state: WorkflowState
                        var error: String?
                    }
                    guard let details = try event.data(as: Details.self) else { continue }
                    handlers.onFinish?(WorkflowFinish(workflowID: id, state: details.state, error: details.error))
                    return
                default:
                    break
                }
            }
        }
        return id
    }

    /// The workflow with its groups and steps, or nil.
    public func workflow(_ id: WorkflowID) async throws -> WorkflowStatus? {
        try await store.workflow(id)
    }

    /// Workflows, newest first, optionally in one state; `before` pages back by id.
    public func workflows(state: WorkflowState? = nil, limit: Int = 100, before: WorkflowID? = nil) async throws
        -> [WorkflowSummary]
    {
        guard limit >= 0 else { throw JobQueueError.invalidInput("limit must not be negative, got \(limit)") }
        return try await store.workflows(state: state, limit: limit, before: before)
    }

    /// Cancels a running workflow, or only one of its groups (by its name or its path, e.g.
    /// `$.sequence[2]`): running members are cancelled, members not started are dropped, at
    /// every depth, in one transaction. A cancelled group counts as a cancelled member of its
    /// parent, whose `onFailure` decides what happens next.
    ///
    /// ```swift
    /// try await queue.cancelWorkflow(id)
    /// try await queue.cancelWorkflow(id, group: "thumbnails")
    /// ```
    @discardableResult
    public func cancelWorkflow(_ id: WorkflowID, group: String? = nil) async throws -> WorkflowStatus {
        let status = try await store.cancelWorkflow(id, group: group)
        wakeWorkers()
        return status
    }

    // MARK: Lanes

    /// A lane with its jobs in append order, or nil.
    public func lane(_ name: String) async throws -> LaneStatus? {
        try await store.lane(name)
    }

    /// Lets a lane halted by a failure (``LaneFailurePolicy/halt``) run its next job.
    @discardableResult
    public func resumeLane(_ name: String) async throws -> LaneStatus {
        let lane = try await store.resumeLane(name)
        wakeWorkers()
        return lane
    }
}

/// Callbacks for one workflow, fed by the event feed.
///
/// ```swift
/// try await queue.submit(workflow, handlers: WorkflowHandlers(
///     onStepFinish: { step in print("step", step.jobID, step.state) },
///     onFinish: { done in print("workflow", done.state, done.error ?? "") }))
/// ```
public struct WorkflowHandlers: Sendable {
    /// Each step that succeeds, dies or is cancelled.
    public var onStepFinish: (@Sendable (JobFinish) -> Void)?
    /// Each group that finishes (the `group` event: its state, counts and failures).
    public var onGroupFinish: (@Sendable (JobEvent) -> Void)?
    /// Once, when the workflow finishes.
    public var onFinish: (@Sendable (WorkflowFinish) -> Void)?

    public init(
        onStepFinish: (@Sendable (JobFinish) -> Void)? = nil,
        onGroupFinish: (@Sendable (JobEvent) -> Void)? = nil,
        onFinish: (@Sendable (WorkflowFinish) -> Void)? = nil
    ) {
        self.onStepFinish = onStepFinish
        self.onGroupFinish = onGroupFinish
        self.onFinish = onFinish
    }
}

/// How a workflow ended, as ``WorkflowHandlers/onFinish`` receives it.
public struct WorkflowFinish: Sendable, Hashable {
    public var workflowID: WorkflowID
    public var state: WorkflowState
    public var error: String?
}
