import Foundation

/// Throw from an executor to stop now and continue later from a checkpoint: the job runs again
/// after `delay` (the attempt does not count), and ``JobContext/checkpoint(as:)`` returns the
/// state saved here.
///
/// ```swift
/// let start = try context.checkpoint(as: Int.self) ?? 0
/// for page in start..<input.pages {
///     try await process(page)
///     if page % 100 == 99 { throw try ContinueLater(checkpoint: page + 1) }
/// }
/// ```
public struct ContinueLater: Error, Sendable {
    public var checkpointJSON: String
    public var delay: Duration

    public init<State: Encodable>(checkpoint: State, after delay: Duration = .zero) throws {
        checkpointJSON = String(decoding: try JSONEncoder.jobq.encode(checkpoint), as: UTF8.self)
        self.delay = delay
    }
}
