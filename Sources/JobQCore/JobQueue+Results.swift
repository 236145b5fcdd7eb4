import Foundation

/// Why ``JobQueue/result(of:as:timeout:)`` returned no result. The job is left as it is.
public enum JobResultError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The job ended without succeeding (`dead` or `cancelled`), with its error text if any.
    case endedWithoutResult(JobID, state: JobState, error: String?)
    /// The job was still in `state` when the wait ran out.
    case timedOut(JobID, state: JobState, after: Duration)
    /// No job has this id.
    case noSuchJob(JobID)
    /// The job succeeded, but its stored result is not the executor's `Output`.
    case undecodableResult(JobID, String)

    public var description: String {
        switch self {
        case .endedWithoutResult(let id, let state, let error):
            "job \(id) ended \(state.rawValue) without a result" + (error.map { ": \($0)" } ?? "")
                + "; retry it with `jobq retry \(id)` if it should run again"
        case .timedOut(let id, let state, let after):
            "job \(id) is still \(state.rawValue) after \(DurationParser.format(after)); wait longer, or look at it with `jobq list`"
        case .noSuchJob(let id): "no job with id \(id); list jobs with `jobq list`"
        case .undecodableResult(let id, let reason):
            "job \(id) succeeded, but its result is not the executor's Output (\(reason)); read it with `jobq list --json`"
        }
    }
}

extension JobQueue {
    /// Waits until a job finishes and returns its executor's typed result: from any process,
    /// with only the id (the enqueuing process may have restarted since). It waits on the event
    /// feed and the store's wake-ups; cancelling the waiting task ends the wait only.
    ///
    /// ```swift
    /// let job = try await queue.enqueue(SendReceipt.self, .init(order: 7))
    /// let receipt = try await queue.result(of: job.id, as: SendReceipt.self, timeout: .seconds(30))
    /// ```
    ///
    /// - Throws: ``JobResultError`` when the job ends `dead` or `cancelled` (with its error
    ///   text), when `timeout` passes first, when there is no such job, or when its result does
    ///   not decode as `E.Output`.
    public func result<E: Executor>(of id: JobID, as executor: E.Type, timeout: Duration) async throws -> E.Output {
        let json = try await resultJSON(of: id, timeout: timeout)
        do {
            return try JSONDecoder().decode(E.Output.self, from: Data(json.utf8))
        } catch {
            throw JobResultError.undecodableResult(id, "\(error)")
        }
    }

    /// ``result(of:as:timeout:)`` as the stored JSON text, for any executor.
    ///
    /// ```swift
    /// print(try await queue.resultJSON(of: 42, timeout: .seconds(5)))  // {"sum":3}
    /// ```
    public func resultJSON(of id: JobID, timeout: Duration) async throws -> String {
        let store = self.store
        let filter = EventFilter(jobIDs: [id], kinds: [.succeeded, .dead, .cancelled, .expired])
        let ended = try await awaitOutcome(filter, timeout: timeout) { () async throws -> String? in
            guard let job = try await store.job(id) else { throw JobResultError.noSuchJob(id) }
            return try Self.outcome(of: job)
        }
        if let ended { return ended }
        let state = try await store.job(id)?.state
        throw JobResultError.timedOut(id, state: state ?? .ready, after: timeout)
    }

    /// Waits up to `timeout` for a job to be final (succeeded, dead or cancelled) and returns
    /// it then; nil when it is still unfinished after `timeout` (zero: look once). For callers
    /// that want the job whatever its outcome, such as the HTTP API's long poll.
    ///
    /// ```swift
    /// if let job = try await queue.finishedJob(42, waitingUpTo: .seconds(30)) { print(job.state) }
    /// ```
    ///
    /// - Throws: ``JobResultError/noSuchJob(_:)`` when there is no such job.
    public func finishedJob(_ id: JobID, waitingUpTo timeout: Duration) async throws -> Job? {
        let store = self.store
        let filter = EventFilter(jobIDs: [id], kinds: [.succeeded, .dead, .cancelled, .expired])
        let look = { @Sendable () async throws -> Job? in
            guard let job = try await store.job(id) else { throw JobResultError.noSuchJob(id) }
            return job.state.isFinal ? job : nil
        }
        if timeout <= .zero { return try await look() }
        return try await awaitOutcome(filter, timeout: timeout, look: look)
    }

    /// Runs `look` until it returns a value: once, then after each event of `filter` (read
    /// from a cursor taken before the first look, so that no end is missed between the two),
    /// until `timeout` passes (nil then). Errors of `look` end the wait; so does cancelling
    /// the waiting task, which leaves the store as it is.
    func awaitOutcome<T: Sendable>(
        _ filter: EventFilter, timeout: Duration, look: @escaping @Sendable () async throws -> T?
    ) async throws -> T? {
        // The cursor first: an end committed after it is in the feed, one before it in the row.
        let cursor = try await store.latestEventID()
        if let value = try await look() { return value }
        let feed = events(filter, since: cursor)
        let ended = try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask {
                for try await _ in feed {
                    if let value = try await look() { return value }
                }
                return nil
            }
            group.addTask {
                try await Task.sleep(for: timeout)
                return nil
            }
            defer { group.cancelAll() }
            return try await group.next() ?? nil
        }
        if ended == nil { try Task.checkCancellation() }
        return ended
    }

    /// The result of a job that succeeded; nil while it has not finished.
    private static func outcome(of job: Job) throws -> String? {
        switch job.state {
        case .succeeded: return job.resultJSON ?? "null"
        case .dead, .cancelled: throw JobResultError.endedWithoutResult(job.id, state: job.state, error: job.error)
        default: return nil
        }
    }
}
