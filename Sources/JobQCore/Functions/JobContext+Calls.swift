import Foundation

/// Calls: a durable function enqueues other jobs once, gives its slot back until they finish,
/// and goes on with their results.
extension JobContext {
    /// Runs `input` as a job of `executor` and returns its result: the job is enqueued once
    /// (with `options`), the function parks until it finishes (holding no worker), and a replay
    /// returns the recorded result without enqueueing again.
    ///
    /// ```swift
    /// let label = try await context.call(ShipLabel.self, .init(order: order.id))
    /// ```
    ///
    /// - Throws: ``FunctionCallFailed`` when the job dies, is cancelled or deleted; catch it to
    ///   compensate.
    public func call<E: Executor>(_ executor: E.Type, _ input: E.Input, options: JobOptions = JobOptions())
        async throws -> E.Output
    {
        let outcomes = try await callOutcomes(E.self, [input], options: options)
        return try outcomes[0].get()
    }

    /// Runs each input as a job of `executor`, all at once, and returns their results in the
    /// same order once every one finished (see ``call(_:_:options:)``).
    ///
    /// ```swift
    /// let thumbnails = try await context.call(Thumbnail.self, each: photos.map { .init(photo: $0) })
    /// ```
    ///
    /// - Throws: the first ``FunctionCallFailed`` in the inputs' order, once all finished.
    public func call<E: Executor>(_ executor: E.Type, each inputs: [E.Input], options: JobOptions = JobOptions())
        async throws -> [E.Output]
    {
        try await callOutcomes(E.self, inputs, options: options).map { try $0.get() }
    }

    /// Each called job's result, or why it has none, in the inputs' order.
    private func callOutcomes<E: Executor>(_ executor: E.Type, _ inputs: [E.Input], options: JobOptions)
        async throws -> [Result<E.Output, FunctionCallFailed>]
    {
        guard !inputs.isEmpty else { return [] }
        guard inputs.count <= 10_000 else {
            throw JobQueueError.invalidInput(
                "a call starts at most 10000 jobs at once; got \(inputs.count) (split them into several calls)")
        }
        let run = try functionRun()
        let (position, recorded) = try await run.begin(.call, "call \(E.name)")
        if let recorded, recorded.cancelled {
            run.advance()
            throw FunctionCancelled(job: jobID)
        }
        let step =
            recorded
            ?? FunctionStep(
                position: position, name: "call \(E.name)", kind: .call, resultJSON: nil, wakeAt: nil,
                attempt: attempt, startedAt: Date(), finishedAt: nil)
        let progress: CallProgress
        if let recorded, let outcomes = recorded.resultJSON, recorded.finishedAt != nil {
            progress = .finished(outcomesJSON: outcomes)
        } else if run.cancelRequested {
            // Cancelled, the function waits for its calls no more (the jobs it called go on).
            throw try await run.cancel(at: step)
        } else if let recorded {
            await run.startWritten()
            progress = try await run.storeCall {
                try await run.store.resumeCall(recorded, job: run.job, workerID: run.workerID)
            }
        } else {
            let requests = try inputs.map { try JobRequest(E.self, $0, options: options) }
            await run.startWritten()
            progress = try await run.storeCall {
                try await run.store.startCall(requests, step: step, job: run.job, workerID: run.workerID)
            }
        }
        switch progress {
        case .parked: throw FunctionParkedForCalls()
        case .lost: throw FunctionAttemptLost()
        case .cancelled: throw try await run.cancel(at: step)
        case .finished(let outcomesJSON):
            run.advance()
            return try Self.callResults(E.self, outcomesJSON)
        }
    }

    private struct ChildOutcome: Decodable {
        var job: JobID
        var state: String
        var result: JSONValue?
        var error: String?
    }

    private static func callResults<E: Executor>(_ executor: E.Type, _ json: String) throws
        -> [Result<E.Output, FunctionCallFailed>]
    {
        let children = try decode([ChildOutcome].self, json, what: "the recorded outcomes of a call of \(E.name)")
        return try children.map { child in
            guard child.state == JobState.succeeded.rawValue else {
                return .failure(
                    FunctionCallFailed(job: child.job, state: child.state, error: child.error ?? "no error recorded"))
            }
            let result = try JSONEncoder.jobq.encode(child.result ?? .null)
            return .success(
                try decode(
                    E.Output.self, String(decoding: result, as: UTF8.self),
                    what: "the result of called job \(child.job)"))
        }
    }
}
