import Foundation
import JobQCore
import JobQSQL

/// SQLite's hot path: the store SQL's transactions. A statement is no round trip here and one
/// writer holds the file at a time, so one transaction per enqueue, claim or batch of
/// completions is as fast as SQLite goes; what pays on a server (statements that commit on
/// their own, shared writes beside each other) buys nothing.
extension SQLiteStore {
    func enqueue(_ requests: [JobRequest]) async throws -> [Enqueued] {
        try await enqueueInTransaction(requests, lock: .exclusive)
    }

    func claim(queues: [String], limit: Int, workerID: String, lease: Duration, startingNow: Int) async throws
        -> [ClaimedJob]
    {
        try await claimInTransaction(
            queues: queues, limit: limit, workerID: workerID, lease: lease, startingNow: startingNow)
    }

    func recordOutcomes(
        _ outcomes: [(job: ClaimedJob, outcome: AttemptOutcome)], starting: [ClaimedJob], workerID: String
    ) async throws -> (outcomes: Set<JobID>, starts: Set<JobID>) {
        try await recordInTransaction(outcomes, starting: starting, workerID: workerID)
    }

    var claimsWithCompletions: Bool { true }

    func recordOutcomes(
        _ outcomes: [(job: ClaimedJob, outcome: AttemptOutcome)], starting: [ClaimedJob], workerID: String,
        claiming request: ClaimRequest
    ) async throws -> CompletionReport {
        try await recordInTransaction(outcomes, starting: starting, workerID: workerID, claiming: request)
    }

    /// Commits are serial, so the feed's order is its ids' order: one read per page.
    func events(after cursor: Int64, filter: EventFilter, limit: Int) async throws -> [JobEvent] {
        try await eventsInOneRead(after: cursor, filter: filter, limit: limit)
    }
}
