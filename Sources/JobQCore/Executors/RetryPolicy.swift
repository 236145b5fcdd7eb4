import Foundation

/// How the jobs of one executor are retried: their attempts, the wait between them, and the
/// errors no retry can fix. An executor without one uses the pool's
/// ``WorkerPool/Options/retryBackoff`` and ``JobOptions``' attempts.
///
/// ```swift
/// struct Charge: Executor {
///     static let name = "charge"
///     static let retryPolicy: RetryPolicy? = RetryPolicy(
///         maxAttempts: 8, backoff: RetryBackoff(base: .seconds(5), maximum: .seconds(600), jitter: 0.3),
///         giveUpOn: { error in error is CardDeclined })
///     func run(_ input: Input, context: JobContext) async throws -> Output { ... }
/// }
/// ```
public struct RetryPolicy: Sendable {
    /// Attempts a job of this executor gets when it is enqueued by its type (`enqueue(Charge.self, ...)`)
    /// without ``JobOptions/maxAttempts``; nil: ``JobOptions/defaultMaxAttempts``. A job's own
    /// value, set at enqueue, always wins.
    public var maxAttempts: Int?
    /// The wait before each retry, instead of the pool's.
    public var backoff: RetryBackoff
    /// Whether an error the executor threw ends the job at once (`dead`, with the error's text)
    /// instead of a retry. ``NonRetryableError`` always does.
    public var giveUpOn: @Sendable (any Error) -> Bool

    public init(
        maxAttempts: Int? = nil, backoff: RetryBackoff = RetryBackoff(),
        giveUpOn: @escaping @Sendable (any Error) -> Bool = { _ in false }
    ) {
        self.maxAttempts = maxAttempts
        self.backoff = backoff
        self.giveUpOn = giveUpOn
    }
}
