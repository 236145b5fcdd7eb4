/// Where a job is in its life.
///
/// ```
/// waiting ──(dependencies met)──▶ scheduled / ready
/// scheduled ──(run_at reached)──▶ ready ──(claimed)──▶ running ──▶ succeeded
///                                   ▲                     │
///                                   └──(retry at run_at)── failed      (attempts left)
///                                                         ├──▶ dead    (out of attempts)
///                                                         └──▶ cancelled
/// ```
///
/// `succeeded`, `dead` and `cancelled` are final: nothing changes such a job again unless
/// someone calls ``JobQueue/retry(_:)`` on a dead or cancelled job.
public enum JobState: String, Sendable, Hashable, CaseIterable, Codable {
    /// Waiting for its dependencies (``JobOptions/after``, a workflow's earlier steps, or the
    /// job before it in its lane) to succeed.
    case waiting
    /// Waiting for its `runAt` time (a delayed job).
    case scheduled
    /// Can be claimed by a worker now.
    case ready
    /// Claimed by a worker that holds a lease on it.
    case running
    /// Finished with a result.
    case succeeded
    /// The last attempt failed; it will be retried at `runAt`.
    case failed
    /// Failed and out of attempts (or failed in a way a retry cannot fix).
    case dead
    /// Cancelled before it could finish.
    case cancelled

    /// Whether the job has reached a state nothing changes on its own.
    public var isFinal: Bool {
        switch self {
        case .succeeded, .dead, .cancelled: return true
        case .waiting, .scheduled, .ready, .running, .failed: return false
        }
    }

    /// Parses a state name as users type it, with an error that lists the valid names.
    ///
    /// ```swift
    /// let state = try JobState(parsing: "dead")
    /// ```
    public init(parsing text: String) throws(JobQueueError) {
        guard let state = JobState(rawValue: text.lowercased()) else {
            throw .invalidInput(
                "unknown state '\(text)'; valid states are: "
                    + JobState.allCases.map(\.rawValue).joined(separator: ", "))
        }
        self = state
    }
}
