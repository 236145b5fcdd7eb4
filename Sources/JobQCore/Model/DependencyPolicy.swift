/// What a job waiting for a dependency does when that dependency dies or is cancelled.
///
/// ```swift
/// let fetch = try await queue.enqueue(Fetch.self, url)
/// // Report whatever happened to the fetch: run even if it failed.
/// try await queue.enqueue(Report.self, .init(), options: .init(after: [fetch.id], onDependencyFailure: .run))
/// ```
public enum DependencyPolicy: String, Sendable, Hashable, CaseIterable, Codable {
    /// The job ends `cancelled`; its error names the dependency and why. The default.
    case cancel
    /// The job ends `dead`; its error names the dependency and why.
    case fail
    /// The failed dependency counts as met; the job still waits for the others, and
    /// ``JobContext/failedDependencies`` lists the one that failed.
    case ignore
    /// The job runs at once, without waiting for its other dependencies;
    /// ``JobContext/failedDependencies`` says which one failed.
    case run

    /// Parses a policy as users type it, with an error that lists the valid names.
    public init(parsing text: String) throws(JobQueueError) {
        guard let policy = DependencyPolicy(rawValue: text.lowercased()) else {
            throw .invalidInput(
                "unknown dependency policy '\(text)'; valid policies are: "
                    + DependencyPolicy.allCases.map(\.rawValue).joined(separator: ", "))
        }
        self = policy
    }
}

/// What a lane does when one of its jobs dies or is cancelled.
public enum LaneFailurePolicy: String, Sendable, Hashable, CaseIterable, Codable {
    /// The failure is recorded and the next job of the lane runs. The default.
    case `continue`
    /// The lane stops until ``JobQueue/resumeLane(_:)`` (`jobq lane resume NAME`).
    case halt

    /// Parses a policy as users type it, with an error that lists the valid names.
    public init(parsing text: String) throws(JobQueueError) {
        guard let policy = LaneFailurePolicy(rawValue: text.lowercased()) else {
            throw .invalidInput("unknown lane failure policy '\(text)'; valid policies are: continue, halt")
        }
        self = policy
    }
}

/// A dependency that failed, as a job that ran anyway (``DependencyPolicy/run``) or ignored it
/// (``DependencyPolicy/ignore``) sees it in ``JobContext/failedDependencies``.
public struct FailedDependency: Sendable, Hashable, Codable {
    /// The dependency's id, when it is a job.
    public var job: JobID?
    /// The workflow group's id, when the dependency is a group (what follows it in a sequence).
    public var group: Int64?
    /// `dead` or `cancelled` for a job, `failed` or `cancelled` for a group.
    public var state: String
    /// Its error, if it had one.
    public var error: String?
}
