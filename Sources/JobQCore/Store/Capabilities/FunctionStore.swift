import Foundation

/// What durable functions need of a store: the record of a function's steps, sleeps and waits,
/// and the signals sent to jobs. Every write a running function makes is fenced on its attempt
/// (this worker's running attempt), so a run that lost its job records nothing.
///
/// ```swift
/// let recorded = try await functions.functionSteps(of: job.id)
/// let taken = try await functions.recordStep(step, job: job, workerID: id)
/// ```
package protocol FunctionStore: AnyObject, Sendable {
    /// The steps recorded for a job, by position (empty for a job that never reached one), and
    /// when cancelling it was asked for.
    func functionRecord(of job: JobID) async throws -> FunctionRecord
    /// Records a finished step or a sleep at its position, fenced on the attempt. A sleep is not
    /// recorded once cancelling the function was asked for.
    func recordStep(_ step: FunctionStep, job: ClaimedJob, workerID: String) async throws -> StepWrite
    /// Records finished steps of many running functions in one transaction, each fenced on
    /// its job's attempt; returns the jobs whose attempt is no longer this worker's (their
    /// steps are not written). Steps only: a sleep, a wait or a call goes through its own call.
    func recordSteps(_ records: [StepRecord], workerID: String) async throws -> Set<JobID>
    /// A wait at `step.position` (recorded now if it was not). For a signal: takes the oldest
    /// signal of its name not taken yet, the step row and the signal changing in one
    /// transaction. For an event: what an emit ended it with, if one did. Past the wait's
    /// deadline with nothing, ends it with nothing.
    func takeSignal(for step: FunctionStep, job: ClaimedJob, workerID: String, now: Double) async throws
        -> SignalTake
    /// Keeps a signal for a job and, when the job is parked waiting for that name, makes it
    /// ready, in one transaction.
    func sendSignal(to job: JobID, name: String, payloadJSON: String?) async throws -> SignalReceipt
    /// Ends the sleep, wait or call at `step.position` as cancelled (recorded now if it was not),
    /// fenced on the attempt: false when the attempt is no longer this worker's.
    func cancelPoint(_ step: FunctionStep, job: ClaimedJob, workerID: String) async throws -> Bool
    /// A call's first run: enqueues its children, records the call at `step.position`, and
    /// parks the function until they all finish, in one transaction.
    func startCall(_ children: [JobRequest], step: FunctionStep, job: ClaimedJob, workerID: String) async throws
        -> CallProgress
    /// A call recorded before: once its children all finished, records their outcomes with the
    /// step and returns them; otherwise parks the function again until they do.
    func resumeCall(_ step: FunctionStep, job: ClaimedJob, workerID: String) async throws -> CallProgress
}

/// Where a call stands (``FunctionStore/startCall(_:step:job:workerID:)``).
package enum CallProgress: Sendable, Equatable {
    /// Every child finished: their outcomes as the step records them (a JSON array of
    /// `{"job", "state", "result"}` or `{"job", "state", "error"}`, in the call's order).
    case finished(outcomesJSON: String)
    /// The function is parked until its children finish: its attempt ended.
    case parked
    /// The attempt is no longer this worker's.
    case lost
    /// Cancelling the function was asked for: the call ends the run.
    case cancelled
}

/// One recorded step of a durable function.
public struct FunctionStep: Sendable, Hashable, Codable {
    /// What the function did at this position.
    public enum Kind: String, Sendable, Hashable, Codable {
        /// `context.step(name) { ... }`: `resultJSON` is what it returned.
        case step
        /// `context.sleep(...)`: `wakeAt` is when it ends.
        case sleep
        /// `context.waitForSignal(name, ...)`: `wakeAt` is its deadline; `resultJSON` the
        /// signal's payload once taken (`finishedAt` set), nil while it waits or when it timed out.
        case signal
        /// `context.waitForEvent(name, where: ...)`: `name` is the event's, `filter` what its
        /// payload must match; `resultJSON` the payload of the emit that ended it, nil while it
        /// waits or when it timed out.
        case event
        /// `context.call(...)`: `children` are the jobs it enqueued; `resultJSON` their
        /// outcomes once they all finished.
        case call
    }

    /// Its place in the function's code, from 0: the order the code reached it.
    public var position: Int
    public var name: String
    public var kind: Kind
    public var resultJSON: String?
    /// A call's child jobs, in the call's order; empty for any other kind.
    public var children: [JobID]
    public var wakeAt: Date?
    /// The attempt that recorded it.
    public var attempt: Int
    public var startedAt: Date
    /// When it finished; nil for a wait still waiting.
    public var finishedAt: Date?
    /// The sleep, wait or call the function had reached when it was cancelled: ended there.
    public var cancelled: Bool
    /// A wait for an event: the filter its payload must match (the filter language); nil for
    /// any payload, and for every other kind.
    public var filter: String?

    package init(
        position: Int, name: String, kind: Kind, resultJSON: String?, children: [JobID] = [], wakeAt: Date?,
        attempt: Int, startedAt: Date, finishedAt: Date?, cancelled: Bool = false, filter: String? = nil
    ) {
        self.cancelled = cancelled
        self.filter = filter
        self.position = position
        self.name = name
        self.kind = kind
        self.resultJSON = resultJSON
        self.children = children
        self.wakeAt = wakeAt
        self.attempt = attempt
        self.startedAt = startedAt
        self.finishedAt = finishedAt
    }
}

extension FunctionStep {
    /// Refuses a step's or signal's name a store would not hold the same everywhere: empty, a
    /// NUL, or over 200 bytes.
    package static func checkName(_ name: String) throws(JobQueueError) {
        guard !name.isEmpty, !name.utf8.contains(0), name.utf8.count <= 200 else {
            throw .invalidInput(
                "a step's or signal's name must be 1 to 200 bytes of text without NUL characters; got \(String(reflecting: name))"
            )
        }
    }
}

/// A durable function's record (``FunctionStore/functionRecord(of:)``).
package struct FunctionRecord: Sendable {
    package var steps: [FunctionStep]
    /// When cancelling the function was asked for (its compensation runs), nil if it was not.
    package var cancelRequested: Date?

    package init(steps: [FunctionStep], cancelRequested: Date?) {
        self.steps = steps
        self.cancelRequested = cancelRequested
    }
}

/// A finished step to record for a running function (``FunctionStore/recordSteps(_:workerID:)``).
package struct StepRecord: Sendable {
    package let job: ClaimedJob
    package let step: FunctionStep

    package init(job: ClaimedJob, step: FunctionStep) {
        self.job = job
        self.step = step
    }
}

/// What ``FunctionStore/recordStep(_:job:workerID:)`` did.
package enum StepWrite: Sendable, Equatable {
    case recorded
    /// The attempt is no longer this worker's: nothing written.
    case lost
    /// Cancelling the function was asked for: a sleep is not recorded, it ends the run.
    case cancelled
}

/// What a wait found (``FunctionStore/takeSignal(for:job:workerID:now:)``).
package enum SignalTake: Sendable, Equatable {
    /// A signal was taken, or an event's emit ended the wait: the payload (nil for a signal
    /// sent without one).
    case taken(payloadJSON: String?)
    /// The deadline passed with no signal.
    case timedOut
    /// None yet: the function parks until the deadline or a signal.
    case none
    /// The attempt is no longer this worker's.
    case lost
    /// Cancelling the function was asked for: the wait ends the run.
    case cancelled
}

/// What ``JobQueue/signal(job:name:payloadJSON:)`` did.
public struct SignalReceipt: Sendable, Hashable, Codable {
    /// The signal's id, in the order signals were sent.
    public var id: Int64
    /// Whether the job was parked waiting for this signal and is now ready to run.
    public var wokeJob: Bool

    package init(id: Int64, wokeJob: Bool) {
        self.id = id
        self.wokeJob = wokeJob
    }
}
