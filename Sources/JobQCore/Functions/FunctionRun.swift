import Foundation
import Synchronization

/// One run of a durable function: its recorded steps, read once at its first step, and where
/// its code is now. A run replays: each step, sleep or wait it reaches takes the next position,
/// and a position already recorded returns what was recorded instead of running again.
///
/// Steps run one at a time, in the order the code reaches them (their positions are that
/// order); a step inside another step's body is refused, since its position would depend on
/// timing.
final class FunctionRun: Sendable {
    private struct State {
        var history: [FunctionStep]?
        var next = 0
        var inStep: String?
        var stepNames: Set<String> = []
        /// Cancelling the function was asked for, seen when the run began or by a write since.
        var cancelRequested = false
        /// Step records queued and not settled yet, and who waits for them.
        var recordsInFlight = 0
        var recordWaiters: [CheckedContinuation<Void, Never>] = []
        /// Why a queued record was not written: the first reason, reported once.
        var recordProblem: (any Error)?
    }

    /// The latest time a sleep or a wait can end: what both stores hold as a time.
    static let latestWake = Date(timeIntervalSince1970: 253_402_300_799)  // 9999-12-31T23:59:59Z

    let store: any FunctionStore
    let job: ClaimedJob
    let workerID: String
    /// Returns once the attempt's start is written: a step's event follows the `started` one.
    let startWritten: @Sendable () async -> Void
    /// Queues a finished step's record with the worker's next transaction (its completion
    /// batcher), which calls back once it is settled.
    let recordLater: @Sendable (StepRecord, @escaping @Sendable (StepRecordResult) -> Void) -> Void
    private let state = Mutex(State())

    init(
        store: any FunctionStore, job: ClaimedJob, workerID: String, startWritten: @escaping @Sendable () async -> Void,
        recordLater: @escaping @Sendable (StepRecord, @escaping @Sendable (StepRecordResult) -> Void) -> Void
    ) {
        self.store = store
        self.job = job
        self.workerID = workerID
        self.startWritten = startWritten
        self.recordLater = recordLater
    }

    /// The next position, and what is recorded there: checks that the code asks for what was
    /// recorded (the same kind and name), and that a step's name is not used twice in a run.
    func begin(_ kind: FunctionStep.Kind, _ name: String) async throws -> (position: Int, recorded: FunctionStep?) {
        try FunctionStep.checkName(name)
        try await loadHistory()
        return try state.withLock { state throws -> (Int, FunctionStep?) in
            if let outer = state.inStep {
                throw NonRetryableError(
                    "\(kind.said) '\(name)' was reached inside the body of step '\(outer)': steps, sleeps and waits "
                        + "run one at a time at the function's top level (move it out of the step's body)")
            }
            if kind == .step, !state.stepNames.insert(name).inserted {
                throw NonRetryableError(
                    "step name '\(name)' is used twice in one run of job \(job.id); give each step of a function "
                        + "its own name (in a loop, put the item in it: \"charge \\(order.id)\")")
            }
            let position = state.next
            let recorded = state.history.flatMap { position < $0.count ? $0[position] : nil }
            if let recorded, recorded.kind != kind || recorded.name != name {
                throw FunctionReplayMismatch(
                    job: job.id, position: position, recorded: recorded, asked: (kind, name))
            }
            if kind == .step { state.inStep = name }
            return (position, recorded)
        }
    }

    /// The code moved past its current position.
    func advance() {
        state.withLock { state in
            state.next += 1
            state.inStep = nil
        }
    }

    /// A step's body failed: nothing is recorded, and the code may go on (it caught the error).
    func abandonStep() {
        state.withLock { $0.inStep = nil }
    }

    /// A version gate (``JobContext/patched(_:)``): whether the code after it is the new code.
    /// Recorded at its position on a run that reaches it first; a replay of a run recorded
    /// before it was added finds another step there, and takes the old code.
    func patched(_ id: String) async throws -> Bool {
        let name = "patched:" + id
        try await loadHistory()
        let recordedHere = state.withLock { state -> FunctionStep?? in
            guard let history = state.history, state.next < history.count else { return .none }
            return .some(history[state.next])
        }
        if case .some(let recorded) = recordedHere, let recorded {
            // Recorded by the new code: take it; anything else was recorded by the old code.
            guard recorded.kind == .step, recorded.name == name else { return false }
            advance()
            return true
        }
        // Reached for the first time: the new code runs from here on.
        let (position, _) = try await begin(.step, name)
        let now = Date()
        try await recordStep(
            FunctionStep(
                position: position, name: name, kind: .step, resultJSON: "true", wakeAt: nil, attempt: job.attempt,
                startedAt: now, finishedAt: now))
        advance()
        return true
    }

    /// Records a finished step without waiting for the write: the worker writes it with its
    /// next transaction, together with other functions' steps and jobs' outcomes, while the
    /// function goes on. Records are written in the order they were made, and everything else
    /// the run writes (a sleep, a wait, a call, its outcome) waits for them first
    /// (``settleRecords()``), so a record is never behind what follows it. A kill before the
    /// write loses the step's record, and the replay runs the step again: at least once, as a
    /// step always is.
    func recordStep(_ step: FunctionStep) async throws {
        try state.withLock { state in
            if let problem = state.recordProblem { throw problem }
            state.recordsInFlight += 1
        }
        recordLater(StepRecord(job: job, step: step)) { [weak self] result in self?.settled(result) }
    }

    private func settled(_ result: StepRecordResult) {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.recordsInFlight -= 1
            switch result {
            case .written: break
            case .lost: if state.recordProblem == nil { state.recordProblem = FunctionAttemptLost() }
            case .failed(let error):
                if state.recordProblem == nil {
                    state.recordProblem = FunctionStepRecordFailed(underlying: error)
                }
            }
            guard state.recordsInFlight == 0 else { return [] }
            defer { state.recordWaiters = [] }
            return state.recordWaiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Whether step records are queued and not settled yet; asked without suspending.
    var hasRecordsInFlight: Bool { state.withLock { $0.recordsInFlight > 0 } }

    /// What kept a queued record from being written, once the records are settled (nil: all
    /// were written): ``FunctionAttemptLost``, or ``FunctionStepRecordFailed``.
    var recordProblem: (any Error)? { state.withLock { $0.recordProblem } }

    /// Waits until every step record queued by ``recordStep(_:)`` is written or refused;
    /// throws what kept one from being written (``FunctionAttemptLost`` when the attempt is no
    /// longer this worker's).
    func settleRecords() async throws {
        // Every attempt ends here, a function's or not: no suspension when nothing is in flight.
        let inFlight = try state.withLock { state throws -> Bool in
            if state.recordsInFlight == 0, let problem = state.recordProblem { throw problem }
            return state.recordsInFlight > 0
        }
        guard inFlight else { return }
        await withCheckedContinuation { continuation in
            let settled = state.withLock { state in
                guard state.recordsInFlight > 0 else { return true }
                state.recordWaiters.append(continuation)
                return false
            }
            if settled { continuation.resume() }
        }
        if let problem = state.withLock({ $0.recordProblem }) { throw problem }
    }

    /// Writes a step's record, fenced on this attempt, and waits for it.
    func record(_ step: FunctionStep) async throws {
        await startWritten()
        switch try await storeCall({ try await self.store.recordStep(step, job: self.job, workerID: self.workerID) }) {
        case .recorded: return
        case .lost: throw FunctionAttemptLost()
        case .cancelled: throw try await cancel(at: step)
        }
    }

    /// A store call of this run. The server going away under it (a restart, a failover) parks
    /// the function for a second instead of failing its attempt: the park is written like any
    /// outcome once the server answers, and the run after it replays. A write whose commit the
    /// outage hid is found recorded by that replay, or is made again (at least once, as a step
    /// is).
    func storeCall<T: Sendable>(_ call: @Sendable () async throws -> T) async throws -> T {
        // What the run writes follows the steps it recorded before.
        try await settleRecords()
        do {
            return try await call()
        } catch  where StoreErrorKind.isOutage(error) {
            throw FunctionPark(until: Date().addingTimeInterval(1), awaiting: nil)
        }
    }

    /// Whether cancelling the function was asked for, as far as this run knows.
    var cancelRequested: Bool { state.withLock { $0.cancelRequested } }

    /// Ends the sleep, wait or call at `step`'s position as cancelled and moves past it: the
    /// error it then throws. Recorded, so that a replay of the compensation ends there too.
    func cancel(at step: FunctionStep) async throws -> FunctionCancelled {
        await startWritten()
        guard try await storeCall({ try await self.store.cancelPoint(step, job: self.job, workerID: self.workerID) })
        else { throw FunctionAttemptLost() }
        state.withLock { $0.cancelRequested = true }
        advance()
        return FunctionCancelled(job: job.id)
    }

    private func loadHistory() async throws {
        guard state.withLock({ $0.history == nil }) else { return }
        let record = try await storeCall { try await self.store.functionRecord(of: self.job.id) }
        state.withLock { state in
            if state.history == nil { state.history = record.steps }
            if record.cancelRequested != nil { state.cancelRequested = true }
        }
    }
}

extension FunctionStep.Kind {
    /// How an error message names it.
    var said: String {
        switch self {
        case .step: "step"
        case .sleep: "sleep"
        case .signal: "the wait for signal"
        case .event: "the wait for event"
        case .call: "the call"
        }
    }
}
