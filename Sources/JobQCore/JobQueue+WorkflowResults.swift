import Foundation

/// A workflow's state, error and final result, read in one snapshot.
package struct WorkflowOutcome: Sendable, Hashable {
    package var state: WorkflowState
    package var error: String?
    /// Set once it succeeded: what a step after the whole workflow would get as "previous".
    package var resultJSON: String?

    package init(state: WorkflowState, error: String?, resultJSON: String?) {
        self.state = state
        self.error = error
        self.resultJSON = resultJSON
    }
}

/// Why ``JobQueue/result(ofWorkflow:as:timeout:)`` returned no result. The workflow is left
/// as it is.
public enum WorkflowResultError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The workflow (or tree) failed or was cancelled, with its error text if any.
    case endedWithoutResult(WorkflowID, state: WorkflowState, error: String?)
    /// It was still running when the wait ran out.
    case timedOut(WorkflowID, after: Duration)
    /// No workflow has this id.
    case noSuchWorkflow(WorkflowID)
    /// It succeeded, but its result is not of the type asked for.
    case undecodableResult(WorkflowID, String)

    public var description: String {
        switch self {
        case .endedWithoutResult(let id, let state, let error):
            "workflow \(id) ended \(state.rawValue) without a result" + (error.map { ": \($0)" } ?? "")
                + "; see its steps with `jobq workflow show \(id)`"
        case .timedOut(let id, let after):
            "workflow \(id) is still running after \(DurationParser.format(after)); wait longer, or look at it with `jobq workflow show \(id)`"
        case .noSuchWorkflow(let id): "no workflow with id \(id); list workflows with `jobq workflow list`"
        case .undecodableResult(let id, let reason):
            "workflow \(id) succeeded, but its result is not of the type asked for (\(reason)); read it with `jobq workflow submit --wait` or `jobq workflow show \(id) --json`"
        }
    }
}

extension JobQueue {
    /// Waits until a workflow (or a job tree) finishes and returns its final result, typed: a
    /// sequence's is its last member's, a parallel group's the array of its members' in order,
    /// a tree's its root job's (what a step after it would get as "previous"). From any
    /// process, with only the id; it waits on the event feed and the store's wake-ups, and
    /// cancelling the waiting task ends the wait only.
    ///
    /// ```swift
    /// let id = try await queue.submit(
    ///     try Workflow(name: "checkout") {
    ///         try WorkflowStep(Charge.self, .init(order: 7))
    ///         try WorkflowStep(Ship.self, .init(order: 7), input: .previous)
    ///     })
    /// let label = try await queue.result(ofWorkflow: id, as: Ship.Output.self, timeout: .seconds(60))
    /// ```
    ///
    /// - Throws: ``WorkflowResultError`` when it fails or is cancelled (with its error text),
    ///   when `timeout` passes first, when there is no such workflow, or when its result does
    ///   not decode as `T`.
    public func result<T: Decodable>(ofWorkflow id: WorkflowID, as type: T.Type, timeout: Duration) async throws -> T {
        let json = try await resultJSON(ofWorkflow: id, timeout: timeout)
        do {
            return try JSONDecoder().decode(T.self, from: Data(json.utf8))
        } catch {
            throw WorkflowResultError.undecodableResult(id, "\(error)")
        }
    }

    /// ``result(ofWorkflow:as:timeout:)`` as JSON text.
    ///
    /// ```swift
    /// print(try await queue.resultJSON(ofWorkflow: 7, timeout: .seconds(5)))  // [{"sum":3},{"sum":7}]
    /// ```
    public func resultJSON(ofWorkflow id: WorkflowID, timeout: Duration) async throws -> String {
        let store = self.store
        // A workflow's end is its `workflow` event.
        let filter = EventFilter(workflow: id, kinds: [.workflow])
        let ended = try await awaitOutcome(filter, timeout: timeout) { () async throws -> String? in
            guard let outcome = try await store.workflowOutcome(id) else {
                throw WorkflowResultError.noSuchWorkflow(id)
            }
            switch outcome.state {
            case .running: return nil
            case .succeeded: return outcome.resultJSON ?? "null"
            case .failed, .cancelled:
                throw WorkflowResultError.endedWithoutResult(id, state: outcome.state, error: outcome.error)
            }
        }
        if let ended { return ended }
        throw WorkflowResultError.timedOut(id, after: timeout)
    }
}
