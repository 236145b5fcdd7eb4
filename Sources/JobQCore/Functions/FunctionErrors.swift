import Foundation

/// A durable function's code asked, at a position of its record, for another step than the one
/// recorded there: the code changed under a running function in a way that does not replay.
/// Retrying cannot fix it; the job ends `dead` with this message. Mark such changes with
/// ``JobContext/patched(_:)``.
public struct FunctionReplayMismatch: Error, Sendable, CustomStringConvertible {
    public let job: JobID
    public let position: Int
    /// What the record holds at `position`: kind and name.
    public let recordedKind: FunctionStep.Kind
    public let recordedName: String
    /// What the code asked for there.
    public let askedKind: FunctionStep.Kind
    public let askedName: String

    init(job: JobID, position: Int, recorded: FunctionStep, asked: (FunctionStep.Kind, String)) {
        self.job = job
        self.position = position
        recordedKind = recorded.kind
        recordedName = recorded.name
        (askedKind, askedName) = asked
    }

    public var description: String {
        "job \(job)'s code changed under it: at position \(position) its record holds \(recordedKind.said) "
            + "'\(recordedName)', and the code now asks for \(askedKind.said) '\(askedName)'. Deploy such a change "
            + "behind `if try await context.patched(\"...\")` so that functions started before it keep the old path, "
            + "or let them finish before deploying"
    }
}

/// A step's body threw: the function's attempt fails with the step named. What the error is
/// decides what follows, as for any executor's error (a ``NonRetryableError`` ends the job,
/// another is retried by the job's retry policy, and the next run replays the steps before).
public struct FunctionStepFailed: Error, Sendable, CustomStringConvertible {
    public let step: String
    public let underlying: any Error

    public var description: String { "step '\(step)' failed: \(underlying)" }
}

/// Thrown by a sleep or a wait that has to wait: the attempt ends and the job is parked (its
/// slot, connection and memory given back) until the time, or until the signal arrives. Let it
/// pass: a function that catches it and goes on runs on without the wait.
struct FunctionPark: Error, Sendable, CustomStringConvertible {
    let until: Date
    let awaiting: String?

    var description: String {
        "the function parks until \(ISO8601.string(until))" + (awaiting.map { " or the signal '\($0)'" } ?? "")
            + "; let this error pass out of the executor"
    }
}

/// The attempt is no longer this worker's (cancelled, or taken over after its lease ran out):
/// the function stops, and its outcome is discarded.
package struct FunctionAttemptLost: Error, Sendable, CustomStringConvertible {
    package init() {}
    package var description: String {
        "this attempt is no longer this worker's (cancelled or taken over); it stops here"
    }
}

/// The store did not take a step's record (refused it for good, or did not answer before the
/// worker shut down): the attempt fails, and its retry replays from the last step recorded.
struct FunctionStepRecordFailed: Error, Sendable, CustomStringConvertible {
    let underlying: any Error

    var description: String {
        "jobq could not record a finished step of this function (\(underlying)); the attempt fails and its retry runs the step again"
    }
}

/// Thrown by a call that parked its function until the jobs it called finish: the attempt
/// ended in the call's own transaction, and nothing is left to record.
struct FunctionParkedForCalls: Error, Sendable, CustomStringConvertible {
    var description: String {
        "the function parks until the jobs it called finish; let this error pass out of the executor"
    }
}

/// A job a durable function called (``JobContext/call(_:_:options:)``) ended without a result:
/// it died, was cancelled, or was deleted. The function can catch it to compensate; uncaught,
/// it fails the function's attempt like any error.
public struct FunctionCallFailed: Error, Sendable, CustomStringConvertible {
    /// The called job.
    public let job: JobID
    /// `dead`, `cancelled` or `deleted`.
    public let state: String
    public let error: String

    public var description: String { "called job \(job) ended \(state): \(error)" }
}

/// Cancelling this durable function was asked for (`jobq cancel`, ``JobQueue/cancel(_:)``): its
/// sleeps, waits and calls throw this at once, and it runs once more so that it can compensate.
/// Catch it to run compensating steps; whatever the run then does (return, throw), the job ends
/// `cancelled`. The run is bounded by the job's timeout.
///
/// ```swift
/// do {
///     try await context.sleep(for: .seconds(86_400))
/// } catch let cancelled as FunctionCancelled {
///     try await context.step("refund") { try await payments.refund(charge) }
///     throw cancelled
/// }
/// ```
public struct FunctionCancelled: Error, Sendable, CustomStringConvertible {
    public let job: JobID

    public var description: String { "job \(job) was cancelled" }
}
