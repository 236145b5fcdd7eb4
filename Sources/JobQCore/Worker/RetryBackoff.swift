import Foundation

/// How long a failed job waits before its next attempt: exponential, capped, with jitter so that
/// jobs that failed together do not all retry at the same instant.
///
/// The wait after attempt `n` is `base * 2^(n-1)`, at most `maximum`, then multiplied by a
/// random factor in `1 - jitter ... 1 + jitter`.
///
/// ```swift
/// let backoff = RetryBackoff(base: .seconds(1), maximum: .seconds(3600), jitter: 0.2)
/// backoff.delay(afterAttempt: 3)  // about 4s
/// ```
public struct RetryBackoff: Sendable, Hashable {
    public var base: Duration
    public var maximum: Duration
    /// A fraction between 0 and 1.
    public var jitter: Double

    public init(base: Duration = .seconds(1), maximum: Duration = .seconds(3600), jitter: Double = 0.2) {
        self.base = base
        self.maximum = maximum
        self.jitter = min(max(jitter, 0), 1)
    }

    /// The wait before the attempt after `attempt` (attempts count from 1).
    public func delay(afterAttempt attempt: Int) -> Duration {
        let exponent = Double(min(max(attempt - 1, 0), 62))
        let raw = min(base.inSeconds * pow(2, exponent), maximum.inSeconds)
        let factor = jitter > 0 ? Double.random(in: (1 - jitter)...(1 + jitter)) : 1
        return .milliseconds(Int64((raw * factor * 1000).rounded()))
    }
}
