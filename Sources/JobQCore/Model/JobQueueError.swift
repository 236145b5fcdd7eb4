/// Every error jobq throws on purpose. Each message says what was wrong and what to do.
///
/// ```swift
/// do {
///     try await queue.cancel(42)
/// } catch JobQueueError.notFound(let message) {
///     print(message)  // "no job with id 42; list jobs with `jobq list`"
/// }
/// ```
public enum JobQueueError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Input was malformed or out of range: a payload that is not JSON, a bad duration,
    /// a negative count. Nothing was written.
    case invalidInput(String)
    /// The job (or other named thing) does not exist.
    case notFound(String)
    /// The operation does not apply to the thing in its current state, e.g. cancelling a job
    /// that already succeeded. Nothing was written.
    case invalidState(String)
    /// The store could not be opened or used: not a database, read-only, disk full.
    case storeUnavailable(String)
    /// The store's schema does not match this jobq: newer than it knows, an applied migration
    /// that was edited, or migrations pending when opened with `.refuseIfPending`. Nothing was
    /// changed; the message says what to do.
    case incompatibleStore(String)
    /// Events after the cursor a follower resumes from were deleted (by retention or
    /// `jobq prune`): reading on would skip them silently, so nothing is read. Resume after the
    /// newest deleted event (the message names its id), or from the oldest kept one (cursor 0)
    /// knowing some are gone.
    case eventsDeleted(String)

    public var description: String {
        switch self {
        case .invalidInput(let message), .notFound(let message), .invalidState(let message),
            .storeUnavailable(let message), .incompatibleStore(let message), .eventsDeleted(let message):
            return message
        }
    }
}
