import Foundation

/// Work made of several jobs: workflows (with their groups, lanes and trees), batches and
/// tracking sets. Each submission writes all its jobs and their dependencies in one transaction.
///
/// ```swift
/// let id = try await workflows.submit(workflow)
/// let status = try await workflows.workflow(id)
/// ```
package protocol WorkflowStore: AnyObject, Sendable {
    func submit(_ workflow: Workflow) async throws -> WorkflowID
    func workflow(_ id: WorkflowID) async throws -> WorkflowStatus?
    func workflows(state: WorkflowState?, limit: Int, before: WorkflowID?) async throws -> [WorkflowSummary]
    func cancelWorkflow(_ id: WorkflowID, group: String?) async throws -> WorkflowStatus
    /// A workflow's state, error, and (once it succeeded) its final result; nil when there is
    /// no such workflow.
    func workflowOutcome(_ id: WorkflowID) async throws -> WorkflowOutcome?
    func lane(_ name: String) async throws -> LaneStatus?
    func resumeLane(_ name: String) async throws -> LaneStatus

    func createBatch(_ name: String, onComplete: JobRequest?, onSuccess: JobRequest?) async throws -> BatchStatus
    func closeBatch(_ name: String) async throws -> BatchStatus
    func batch(_ name: String) async throws -> BatchStatus?
    func batches(limit: Int) async throws -> [BatchStatus]
    func addTrackingSet(_ name: String, members: [TrackingMember]) async throws -> TrackingSetStatus
    func removeTrackingSet(_ name: String) async throws
    func trackingSets() async throws -> [TrackingSetStatus]
}
