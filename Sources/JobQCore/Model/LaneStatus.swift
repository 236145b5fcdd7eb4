import Foundation

/// A lane and its jobs, in append order.
public struct LaneStatus: Sendable, Hashable {
    public var name: String
    public var onFailure: LaneFailurePolicy
    /// The job whose failure halted the lane, until it is resumed.
    public var haltedBy: JobID?
    /// The last job appended.
    public var tail: JobID?
    public var jobs: [Job]

    package init(name: String, onFailure: LaneFailurePolicy, haltedBy: JobID? = nil, tail: JobID? = nil, jobs: [Job]) {
        self.name = name
        self.onFailure = onFailure
        self.haltedBy = haltedBy
        self.tail = tail
        self.jobs = jobs
    }
}
