import Foundation

/// Durable functions: an executor's body written as plain code whose steps run once, that sleeps
/// for days and waits for signals without holding a worker, and that picks up where it was after
/// a crash, a retry or a deploy.
///
/// Each ``step(_:_:)->_``, ``sleep(for:)`` and ``waitForSignal(_:as:timeout:)`` takes the next
/// position in the job's record. When the function runs again, the positions already recorded
/// return what was recorded (a step's result, a signal's payload) without running again, so the
/// code before them must reach them in the same order: keep what decides the path in steps.
///
/// ```swift
/// struct OrderProcess: Executor {
///     static let name = "order"
///     func run(_ order: Order, context: JobContext) async throws -> Receipt {
///         let charge = try await context.step("charge") { try await payments.charge(order) }
///         try await context.sleep(for: .seconds(3 * 86_400))
///         guard let ok = try await context.waitForSignal("approved", as: Approval.self, timeout: .seconds(7 * 86_400))
///         else {
///             _ = try await context.step("refund") { try await payments.refund(charge) }
///             throw NonRetryableError("not approved within a week; refunded")
///         }
///         return Receipt(charge: charge, approvedBy: ok.user)
///     }
/// }
/// ```
extension JobContext {
    /// Runs `body` once for this job and returns its result; when the function runs again, the
    /// result recorded the first time, without running `body`.
    ///
    /// The result is recorded when `body` returns, fenced on this attempt: the worker writes it
    /// with the steps other functions finished meanwhile, in one transaction, while the function
    /// goes on; what the function writes next (a sleep, a wait, a call, its outcome) waits for
    /// the record first. A step is **at least once** (a worker killed between the step's side
    /// effect and the record runs it again on the next attempt), its recorded result **exactly
    /// once**. Make a step's side effect idempotent
    /// where running it twice would hurt: pass a key derived from the job and the step to the
    /// system it calls (`"\(context.jobID)-charge"` as a payment's idempotency key). A step
    /// whose effect is rows of the application's own database can commit them with its record
    /// instead, exactly once (`step(_:in:_:)` of JobQSQLite and JobQPostgres, see
    /// <doc:DurableFunctions>).
    ///
    /// A step that throws records nothing and fails the attempt with the step named
    /// (``FunctionStepFailed``); the job's retry policy decides what follows, and the retry
    /// replays the steps before it. Names are unique within a run.
    ///
    /// ```swift
    /// let charge = try await context.step("charge") { try await payments.charge(order, key: "\(context.jobID)") }
    /// ```
    public func step<T: Codable & Sendable>(_ name: String, _ body: () async throws -> T) async throws -> T {
        let run = try functionRun()
        let (position, recorded) = try await run.begin(.step, name)
        if let recorded {
            run.advance()
            return try Self.decode(T.self, recorded.resultJSON ?? "null", what: "the recorded result of step '\(name)'")
        }
        let started = Date()
        let value: T
        do {
            value = try await body()
        } catch let park as FunctionPark {
            run.abandonStep()
            throw park
        } catch {
            run.abandonStep()
            throw FunctionStepFailed(step: name, underlying: error)
        }
        do {
            try await run.recordStep(
                FunctionStep(
                    position: position, name: name, kind: .step, resultJSON: try Self.stepResultJSON(value, step: name),
                    wakeAt: nil, attempt: attempt, startedAt: started, finishedAt: Date()))
        } catch {
            run.abandonStep()
            throw error
        }
        run.advance()
        return value
    }

    /// Runs `body` once for this job as ``step(_:_:)->_`` does, trying it again in this run as
    /// `policy` says when it throws: up to `policy.maxAttempts` tries (1 when nil), `policy.backoff`
    /// apart, none after an error `policy.giveUpOn` accepts. The slot is held meanwhile, so keep
    /// the backoff short; a step still failing after its tries fails the function for good, the
    /// step named. The job's own retry policy then does not apply.
    ///
    /// ```swift
    /// let rate = try await context.step("rate", retry: RetryPolicy(maxAttempts: 5, backoff: .init(base: .milliseconds(200)))) {
    ///     try await exchange.rate(for: order.currency)
    /// }
    /// ```
    public func step<T: Codable & Sendable>(_ name: String, retry policy: RetryPolicy, _ body: () async throws -> T)
        async throws -> T
    {
        try await step(name) { () async throws -> T in
            let tries = max(policy.maxAttempts ?? 1, 1)
            var tried = 1
            while true {
                do {
                    return try await body()
                } catch {
                    if error is NonRetryableError || error is CancellationError { throw error }
                    if policy.giveUpOn(error) {
                        throw NonRetryableError("failed for good (its retry policy gives up on this error): \(error)")
                    }
                    guard tried < tries else {
                        throw NonRetryableError("failed \(tried) times, its retry policy's limit: \(error)")
                    }
                    try await Task.sleep(for: policy.backoff.delay(afterAttempt: tried))
                    tried += 1
                }
            }
        }
    }

    /// Runs `body`, which returns nothing, once for this job (see ``step(_:_:)->_``); its record
    /// holds `null`.
    ///
    /// ```swift
    /// try await context.step("send receipt") { try await mail.send(receipt) }
    /// ```
    public func step(_ name: String, _ body: () async throws -> Void) async throws {
        _ = try await step(name) { () async throws -> NoResult in
            try await body()
            return NoResult()
        }
    }

    /// Sleeps durably for `duration` from the first time the function reaches this line: the
    /// job gives its slot back and is due again when the time comes, holding no worker,
    /// connection or memory meanwhile (a restart or a deploy in between changes nothing).
    ///
    /// ```swift
    /// try await context.sleep(for: .seconds(3 * 86_400))  // three days
    /// ```
    public func sleep(for duration: Duration) async throws {
        guard duration >= .zero else {
            throw JobQueueError.invalidInput(
                "a sleep's duration must not be negative; got \(DurationParser.format(duration))")
        }
        try await sleep(until: try Self.wake(after: duration))
    }

    /// Sleeps durably until `date` (see ``sleep(for:)``); a date in the past returns at once.
    ///
    /// ```swift
    /// try await context.sleep(until: order.shipBy)
    /// ```
    public func sleep(until date: Date) async throws {
        guard date <= FunctionRun.latestWake else {
            throw JobQueueError.invalidInput(
                "a sleep until \(ISO8601.string(date)) ends after 9999-12-31, later than a store can hold a time")
        }
        let run = try functionRun()
        let (position, recorded) = try await run.begin(.sleep, "sleep")
        // Cancelled, the function sleeps no more where it is: the sleep it reached ends as
        // cancelled (recorded so, for a replay of its compensation); one it slept replays.
        if let recorded, recorded.cancelled {
            run.advance()
            throw FunctionCancelled(job: jobID)
        }
        let now = Date()
        let step =
            recorded
            ?? FunctionStep(
                position: position, name: "sleep", kind: .sleep, resultJSON: nil, wakeAt: date, attempt: attempt,
                startedAt: now, finishedAt: now)
        let wake = step.wakeAt ?? step.startedAt
        if run.cancelRequested, recorded == nil || wake > now { throw try await run.cancel(at: step) }
        if recorded == nil { try await run.record(step) }
        run.advance()
        if wake > now { throw FunctionPark(until: wake, awaiting: nil) }
    }

    /// Waits durably for the signal `name` (``JobQueue/signal(job:name:payloadJSON:)``, `jobq
    /// signal`) and returns its payload decoded as `type`, or nil when `timeout` passes first
    /// (nil: no timeout). The job gives its slot back while it waits. A signal sent before the
    /// function got here is kept and taken now; each signal is taken by one wait, oldest first.
    ///
    /// ```swift
    /// guard let approval = try await context.waitForSignal("approved", as: Approval.self, timeout: .seconds(86_400))
    /// else { throw NonRetryableError("nobody approved it within a day") }
    /// ```
    public func waitForSignal<T: Decodable>(_ name: String, as type: T.Type, timeout: Duration? = nil)
        async throws -> T?
    {
        guard let payload = try await waitAtNextPosition(.signal, name, filter: nil, timeout: timeout) else {
            return nil
        }
        return try Self.decode(T.self, payload, what: "the payload of signal '\(name)'")
    }

    /// Waits durably for the event `event` (``JobQueue/emit(_:payloadJSON:dedupe:)``, `jobq
    /// emit`) with a payload that `filter` matches (the filter language's payload terms, e.g.
    /// `/order = 42`; nil: any payload), and returns that payload decoded as `type`, or nil when
    /// `timeout` passes first (nil: no timeout). The job gives its slot back while it waits.
    ///
    /// An event is not addressed to a job, so nothing is kept for a function that has not
    /// reached its wait yet: the wait takes the first matching emit after it began (a signal,
    /// sent to one job, is kept until its wait takes it). Every function waiting for a matching
    /// emit takes it, in the emit's transaction.
    ///
    /// ```swift
    /// guard let paid = try await context.waitForEvent(
    ///     "order.paid", where: "/order = \(order.id)", as: Payment.self, timeout: .seconds(86_400))
    /// else { throw NonRetryableError("order \(order.id) was not paid within a day") }
    /// ```
    public func waitForEvent<T: Decodable>(
        _ event: String, where filter: String? = nil, as type: T.Type, timeout: Duration? = nil
    ) async throws -> T? {
        // Bad code, not a bad moment: a retry would fail the same way.
        do {
            try Names.check(event, what: "event name")
            if let filter { try Self.checkEventFilter(filter, event: event) }
        } catch {
            throw NonRetryableError(error.description)
        }
        guard let payload = try await waitAtNextPosition(.event, event, filter: filter, timeout: timeout) else {
            return nil
        }
        return try Self.decode(T.self, payload, what: "the payload of event '\(event)'")
    }

    /// A wait for a signal or an event at the function's next position, one path for both: the
    /// payload it ended with as JSON (`null` for a signal sent without one), or nil when its
    /// timeout passed first. Parks the function while nothing has come.
    private func waitAtNextPosition(_ kind: FunctionStep.Kind, _ name: String, filter: String?, timeout: Duration?)
        async throws -> String?
    {
        if let timeout, timeout < .zero {
            throw JobQueueError.invalidInput(
                "a wait's timeout must not be negative; got \(DurationParser.format(timeout))")
        }
        let deadline = try timeout.map(Self.wake(after:)) ?? FunctionRun.latestWake
        let run = try functionRun()
        let (position, recorded) = try await run.begin(kind, name)
        if let recorded, recorded.cancelled {
            run.advance()
            throw FunctionCancelled(job: jobID)
        }
        if let recorded, recorded.finishedAt != nil {
            run.advance()
            // A wait that timed out recorded no result; a signal sent without a payload, `null`.
            return recorded.resultJSON
        }
        let step =
            recorded
            ?? FunctionStep(
                position: position, name: name, kind: kind, resultJSON: nil, wakeAt: deadline, attempt: attempt,
                startedAt: Date(), finishedAt: nil, filter: filter)
        if run.cancelRequested { throw try await run.cancel(at: step) }
        await run.startWritten()
        let take = try await run.storeCall {
            try await run.store.takeSignal(
                for: step, job: run.job, workerID: run.workerID, now: Date().timeIntervalSince1970)
        }
        switch take {
        case .taken(let payload):
            run.advance()
            return payload ?? "null"
        case .timedOut:
            run.advance()
            return nil
        case .none:
            throw FunctionPark(until: step.wakeAt ?? FunctionRun.latestWake, awaiting: name)
        case .lost:
            throw FunctionAttemptLost()
        case .cancelled:
            throw try await run.cancel(at: step)
        }
    }

    /// Refuses a filter that is not one an emit can apply to its payload: it must read, and
    /// each of its terms must be about the payload (an emit has no state, queue or time).
    static func checkEventFilter(_ filter: String, event: String) throws(JobQueueError) {
        let parsed = try JobFilter(filter)
        for term in parsed.terms {
            switch term.condition {
            case .payloadExists, .payloadEquals, .payloadCompare: continue
            default:
                throw .invalidInput(
                    "the filter of a wait for event '\(event)' may test only the event's payload (terms like "
                        + "/order = 42 or /amount > 100); \(String(reflecting: filter)) tests a job's field")
            }
        }
    }

    /// A version gate for changing a function's code while functions run it: true on runs
    /// that reach this line for the first time with the new code, false on replays of runs
    /// recorded by the old code (which must keep taking the old path).
    ///
    /// ```swift
    /// if try await context.patched("send-receipt") {
    ///     _ = try await context.step("receipt") { try await mail.sendReceipt(order) }
    /// }
    /// ```
    public func patched(_ id: String) async throws -> Bool {
        try await functionRun().patched(id)
    }

    func functionRun() throws -> FunctionRun {
        guard let function else {
            throw JobQueueError.invalidState(
                "durable steps, sleeps and waits run only in a job run by a WorkerPool (this context has no store)")
        }
        return function
    }

    private static func wake(after duration: Duration) throws -> Date {
        let wake = Date().addingTimeInterval(duration.inSeconds)
        guard wake <= FunctionRun.latestWake else {
            throw JobQueueError.invalidInput(
                "a wait of \(DurationParser.format(duration)) ends after 9999-12-31, later than a store can hold a time"
            )
        }
        return wake
    }

    /// A step's result as the JSON its record stores; a result that does not encode, or holds
    /// what jobq does not store, fails the function for good with the step named.
    static func stepResultJSON(_ value: some Encodable, step name: String) throws -> String {
        let json: String
        do {
            json = String(decoding: try JSONEncoder.jobq.encode(value), as: UTF8.self)
        } catch {
            throw NonRetryableError("the result of step '\(name)' does not encode as JSON: \(error)")
        }
        if let problem = StoredText.problem(inJSON: json) {
            throw NonRetryableError("the result of step '\(name)' holds \(problem), which jobq does not store")
        }
        return json
    }

    static func decode<T: Decodable>(_ type: T.Type, _ json: String, what: String) throws -> T {
        do {
            return try JSONDecoder.jobq.decode(T.self, from: Data(json.utf8))
        } catch {
            throw NonRetryableError(
                "\(what) does not decode as \(T.self): \(DecodingErrorText.describe(error)); the code and the record disagree"
            )
        }
    }
}

/// The record of a step that returns nothing: JSON `null`.
package struct NoResult: Codable, Sendable {
    package init() {}
    package init(from decoder: any Decoder) throws {}
    package func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encodeNil()
    }
}
