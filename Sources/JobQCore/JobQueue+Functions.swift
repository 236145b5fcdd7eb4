import Foundation

extension JobQueue {
    // MARK: Durable functions

    /// Sends the signal `name` to a job, with an optional JSON payload. A durable function
    /// parked in ``JobContext/waitForSignal(_:as:timeout:)`` for that name is made ready in the
    /// same transaction; otherwise the signal is kept, and the function's next wait for that name
    /// takes it (each signal is taken once, oldest first). Signals are kept with their job and
    /// deleted with it.
    ///
    /// ```swift
    /// try await queue.signal(job: orderJob, name: "approved", payloadJSON: #"{"user":"ada"}"#)
    /// ```
    ///
    /// - Throws: ``JobQueueError/notFound(_:)`` for an unknown job, ``JobQueueError/invalidState(_:)``
    ///   for a job that has finished (nothing could take the signal), and
    ///   ``JobQueueError/invalidInput(_:)`` for a bad name or a payload that is not JSON. Nothing
    ///   is written then.
    @discardableResult
    public func signal(job: JobID, name: String, payloadJSON: String? = nil) async throws -> SignalReceipt {
        try FunctionStep.checkName(name)
        if let payloadJSON {
            guard (try? JSONSerialization.jsonObject(with: Data(payloadJSON.utf8), options: .fragmentsAllowed)) != nil
            else {
                throw JobQueueError.invalidInput(
                    "the payload of signal '\(name)' is not JSON: \(payloadJSON.prefix(80)); quote a string (\"\\\"yes\\\"\")"
                )
            }
            try StoredText.checkJSON(payloadJSON, what: "the payload of signal '\(name)'")
        }
        let receipt = try await store.sendSignal(to: job, name: name, payloadJSON: payloadJSON)
        // Pools of this process learn of the ready job now; others from the commit.
        if receipt.wokeJob { wakeWorkers() }
        return receipt
    }

    /// Sends the signal `name` with `payload` encoded as JSON (see ``signal(job:name:payloadJSON:)``).
    ///
    /// ```swift
    /// try await queue.signal(job: orderJob, name: "approved", payload: Approval(user: "ada"))
    /// ```
    @discardableResult
    public func signal<Payload: Encodable>(job: JobID, name: String, payload: Payload) async throws -> SignalReceipt {
        let json = String(decoding: try JSONEncoder.jobq.encode(payload), as: UTF8.self)
        return try await signal(job: job, name: name, payloadJSON: json)
    }

    /// A durable function's record: its steps, sleeps and waits in the order its code reached
    /// them, with their results; empty for a job that never reached one.
    ///
    /// ```swift
    /// for step in try await queue.functionSteps(of: orderJob) { print(step.position, step.name) }
    /// ```
    public func functionSteps(of job: JobID) async throws -> [FunctionStep] {
        try await store.functionRecord(of: job).steps
    }
}
