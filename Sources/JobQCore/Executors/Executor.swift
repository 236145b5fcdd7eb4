import Foundation

/// A named piece of work: JSON in, JSON out.
///
/// Register executors with a ``WorkerPool``; enqueue jobs for them by type or by name.
///
/// ```swift
/// struct Sum: Executor {
///     static let name = "sum"
///     struct Input: Codable, Sendable { var a: Int; var b: Int }
///     struct Output: Codable, Sendable { var sum: Int }
///
///     func run(_ input: Input, context: JobContext) async throws -> Output {
///         Output(sum: input.a + input.b)
///     }
/// }
/// ```
///
/// An executor that throws fails the attempt; the job is retried with backoff until it runs
/// out of attempts. Throw ``NonRetryableError`` when a retry cannot help. When the job is
/// cancelled or times out, the task running `run` is cancelled: check `Task.isCancelled` or
/// call `try Task.checkCancellation()` in long loops.
public protocol Executor: Sendable {
    associatedtype Input: Codable & Sendable
    associatedtype Output: Codable & Sendable

    /// The name jobs are enqueued under. Unique within a pool.
    static var name: String { get }

    /// The timeout of an attempt when the job sets none. Default: none.
    static var timeout: Duration? { get }

    /// How this executor's jobs are retried (attempts, backoff, errors that never retry).
    /// Default: nil, the pool's backoff and the job's attempts.
    static var retryPolicy: RetryPolicy? { get }

    func run(_ input: Input, context: JobContext) async throws -> Output
}

extension Executor {
    public static var timeout: Duration? { nil }
    public static var retryPolicy: RetryPolicy? { nil }
}

/// Throw this from an executor when retrying cannot help (bad input, a permanent refusal):
/// the job goes straight to `dead` with this message.
///
/// ```swift
/// guard input.url.hasPrefix("https://") else {
///     throw NonRetryableError("only https URLs are fetched, got \(input.url)")
/// }
/// ```
public struct NonRetryableError: Error, Sendable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// What a running job can know about itself, and how it reports progress.
public struct JobContext: Sendable {
    /// The job being run.
    public let jobID: JobID
    /// The executor's name.
    public let executor: String
    public let queue: String
    /// This attempt's number, starting at 1.
    public let attempt: Int
    public let maxAttempts: Int
    /// The attempt's deadline, if the job has a timeout.
    public let deadline: ContinuousClock.Instant?
    /// How many times the job snoozed or continued later so far.
    public let snoozes: Int
    /// The state saved by ``ContinueLater``, as JSON text.
    public let checkpointJSON: String?
    /// The workflow the job is a step of.
    public let workflowID: WorkflowID?

    let progressWriter: AttemptProgress?
    /// The workflow's shared context when the attempt started, as JSON text.
    let sharedJSON: String?
    /// This attempt's writes to the shared context, committed with its success.
    let sharedWrites: SharedWrites?
    let failedDependenciesJSON: String?
    /// The run's durable-function record (``step(_:_:)->_``), set by the worker pool.
    var function: FunctionRun? = nil

    /// Whether this is the last attempt the job gets.
    public var isLastAttempt: Bool { attempt >= maxAttempts }

    /// The state the job saved with ``ContinueLater``, or nil on its first run.
    public func checkpoint<T: Decodable>(as type: T.Type) throws -> T? {
        guard let checkpointJSON else { return nil }
        return try JSONDecoder.jobq.decode(T.self, from: Data(checkpointJSON.utf8))
    }

    /// Reports how far the job is, from 0 to 1, with an optional message. The latest value is
    /// stored on the job and each stored report is a `progress` event; reports closer together
    /// than a quarter second are merged, so calling this in a tight loop is cheap.
    ///
    /// ```swift
    /// for (index, file) in files.enumerated() {
    ///     try await convert(file)
    ///     try await context.progress(Double(index + 1) / Double(files.count), message: file)
    /// }
    /// ```
    public func progress(_ fraction: Double, message: String? = nil) async throws {
        guard fraction.isFinite else {
            throw JobQueueError.invalidInput("progress must be a finite number, got \(fraction)")
        }
        try await progressWriter?.report(
            .init(fraction: min(max(fraction, 0), 1), message: message.map(StoredText.plain)))
    }

    /// Reports any Codable value as the job's latest update (stored on the job and sent as a
    /// `progress` event with a `data` field), throttled like ``progress(_:message:)``.
    public func update<T: Encodable & Sendable>(_ value: T) async throws {
        let json = String(decoding: try JSONEncoder.jobq.encode(value), as: UTF8.self)
        try StoredText.checkJSON(json, what: "the update of job \(jobID)")
        try await progressWriter?.report(.init(dataJSON: json))
    }
}

/// An executor with its types erased, as the pool stores it: JSON text in, JSON text out.
struct ErasedExecutor: Sendable {
    let name: String
    let defaultTimeout: Duration?
    let retryPolicy: RetryPolicy?
    let run: @Sendable (_ payloadJSON: String, _ context: JobContext) async throws -> String

    init(name: String, run: @escaping @Sendable (_ payloadJSON: String, _ context: JobContext) async throws -> String) {
        self.name = name
        self.defaultTimeout = nil
        self.retryPolicy = nil
        self.run = run
    }

    init<E: Executor>(_ executor: E) {
        name = E.name
        defaultTimeout = E.timeout
        retryPolicy = E.retryPolicy
        let textPath = executor as? any PayloadTextExecutor
        run = { payloadJSON, context in
            if let output = textPath?.outputText(forPayload: payloadJSON, context: context) { return output }
            let input: E.Input
            do {
                input = try JSONDecoder.jobq.decode(E.Input.self, from: Data(payloadJSON.utf8))
            } catch {
                throw PayloadDecodingError(executor: E.name, underlying: error)
            }
            let output = try await executor.run(input, context: context)
            do {
                return String(decoding: try JSONEncoder.jobq.encode(output), as: UTF8.self)
            } catch {
                throw NonRetryableError("cannot encode the output of '\(E.name)' as JSON: \(error)")
            }
        }
    }
}

/// A payload that does not decode as the executor's `Input`. Retrying cannot fix it.
struct PayloadDecodingError: Error, CustomStringConvertible {
    let executor: String
    let underlying: Error

    var description: String {
        "payload does not match the input of '\(executor)': \(DecodingErrorText.describe(underlying))"
    }
}

enum DecodingErrorText {
    /// A one-line description of a decoding error that names the field, e.g.
    /// "missing key 'b'" or "'a': expected Int, found a string".
    static func describe(_ error: Error) -> String {
        guard let error = error as? DecodingError else { return "\(error)" }
        func path(_ context: DecodingError.Context) -> String {
            let keys = context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }
            return keys.isEmpty ? "the payload" : "'" + keys.joined(separator: ".") + "'"
        }
        switch error {
        case .keyNotFound(let key, let context):
            let parent = context.codingPath.isEmpty ? "" : " in \(path(context))"
            return "missing key '\(key.stringValue)'\(parent)"
        case .typeMismatch(let type, let context):
            return "\(path(context)): expected \(type), \(context.debugDescription)"
        case .valueNotFound(let type, let context):
            return "\(path(context)): expected \(type), found null"
        case .dataCorrupted(let context):
            return "\(path(context)): \(context.debugDescription)"
        @unknown default:
            return "\(error)"
        }
    }
}
