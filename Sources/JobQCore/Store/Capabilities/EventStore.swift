import Foundation

/// The event feed, and what tells its followers (and idle workers) that something was committed.
///
/// ```swift
/// let (newest, page) = try await events.eventsUpToNewest(after: cursor, filter: EventFilter(), limit: 100)
/// ```
package protocol EventStore: AnyObject, Sendable {
    func events(after cursor: Int64, filter: EventFilter, limit: Int) async throws -> [JobEvent]
    /// The newest event id and, from the same snapshot, the matches after `cursor`.
    func eventsUpToNewest(after cursor: Int64, filter: EventFilter, limit: Int) async throws -> (
        newest: Int64, events: [JobEvent]
    )
    func latestEventID() async throws -> Int64

    /// Calls `observer` after every transaction this process commits to the store (event feeds
    /// wake on it). Returns a token for ``removeCommitObserver(_:)``.
    func addCommitObserver(_ observer: @escaping @Sendable () -> Void) -> UUID
    func removeCommitObserver(_ token: UUID)
    /// What reports other processes' commits that matter to `interest`, or nil when no other
    /// process can reach the store (a store in memory).
    func otherCommitsWatch(for interest: CommitInterest) -> (any OtherCommitsWatch)?
}
