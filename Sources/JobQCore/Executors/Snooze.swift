import Foundation

/// Throw from an executor to hand the job back without holding a worker: it runs again after
/// `delay`, and the attempt does not count. The number of snoozes is kept on the job and capped
/// (``WorkerPool/Options/maximumSnoozes``).
///
/// ```swift
/// guard try await upstream.isReady() else { throw Snooze(for: .seconds(30)) }
/// ```
public struct Snooze: Error, Sendable {
    public var delay: Duration
    public init(for delay: Duration) { self.delay = delay }
}
