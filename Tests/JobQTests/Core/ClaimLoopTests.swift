import Foundation
import Testing

@testable import JobQCore
@testable import JobQSQL

/// The one claim loop's decisions, as each store steps through them: SQLite with the queues'
/// settings read first, PostgreSQL learning from each queue's claim.
@Suite("Claim loop")
struct ClaimLoopTests {
    private static func request(_ queues: [String], limit: Int = 10, startingNow: Int = 4) -> ClaimRequest {
        ClaimRequest(queues: queues, limit: limit, lease: .seconds(30), startingNow: startingNow)
    }

    /// `count` claimed jobs of `queue` (only their count and queue matter to the loop).
    private static func jobs(_ count: Int, of queue: String) -> [ClaimedJob] {
        (0..<count).map { index in
            var values = [SQLValue](repeating: .null, count: Int(ClaimedJob.columnCount))
            values[0] = .integer(Int64(index + 1))
            values[1] = .text(queue)
            values[2] = .text("echo")
            values[3] = .text("{}")
            values[4] = .integer(0)
            values[5] = .integer(1)
            values[6] = .integer(3)
            values[7] = .real(0)
            values[12] = .integer(0)
            values[19] = .integer(0)
            return ClaimedJob(SQLRow(names: [], values: values))
        }
    }

    private static func describe(_ step: ClaimLoop.Step?) -> String {
        switch step {
        case nil: "done"
        case .promoteDue: "promote"
        case .claim(let part): "claim \(part.queue) \(part.limit)/\(part.startingNow)"
        case .claimLimited(let part): "limited \(part.queue) \(part.limit)/\(part.startingNow)"
        }
    }

    @Test func inOneTransactionDueJobsComeFirstPausedQueuesArePassedAndLimitsAreKnown() {
        var settings = QueueSettings()
        settings.paused = ["paused"]
        let limited = LimitedQueue(
            SQLRow(names: [], values: [.text("limited"), .integer(0), .integer(2), .null, .null, .null]))
        settings.limited = ["limited": limited]
        var loop = ClaimLoop(Self.request(["a", "paused", "limited", "b"]), settings: settings)
        #expect(Self.describe(loop.next()) == "promote")
        loop.promoted()
        #expect(Self.describe(loop.next()) == "claim a 10/4")
        loop.took(Self.jobs(3, of: "a"))
        // What the queues before it gave is taken off the limit and the starts.
        #expect(Self.describe(loop.next()) == "limited limited 7/1")
        loop.took(Self.jobs(2, of: "limited"))
        #expect(Self.describe(loop.next()) == "claim b 5/0")
        loop.took(Self.jobs(5, of: "b"))
        #expect(Self.describe(loop.next()) == "done")
        #expect(loop.claimed.map(\.queue) == ["a", "a", "a", "limited", "limited", "b", "b", "b", "b", "b"])
    }

    @Test func aClaimThatFindsDueJobsPromotesOnceThenClaimsTheSameQueueAgain() {
        var loop = ClaimLoop(Self.request(["a", "b"]), settings: nil)
        #expect(Self.describe(loop.next()) == "claim a 10/4")
        loop.took(Self.jobs(1, of: "a"), dueFound: true)
        #expect(Self.describe(loop.next()) == "promote")
        loop.promoted()
        #expect(Self.describe(loop.next()) == "claim a 9/3")
        // Due again (fell due meanwhile): not promoted twice in one claim.
        loop.took(Self.jobs(1, of: "a"), dueFound: true)
        #expect(Self.describe(loop.next()) == "claim b 8/2")
        loop.took([])
        #expect(Self.describe(loop.next()) == "done")
    }

    @Test func aQueueItsClaimSaysIsLimitedIsClaimedUnderItsLimits() {
        var loop = ClaimLoop(Self.request(["a", "b"]), settings: nil)
        #expect(Self.describe(loop.next()) == "claim a 10/4")
        loop.took([], limited: true)
        guard case .claimLimited(let part) = loop.next() else {
            Issue.record("expected the limited claim of a")
            return
        }
        #expect(part.queue == "a" && part.limits == nil && !part.settingsRead, "read in its own transaction")
        loop.took(Self.jobs(2, of: "a"))
        #expect(Self.describe(loop.next()) == "claim b 8/2")
    }

    @Test func theLimitReachedEndsTheClaimBeforeTheNextQueue() {
        var loop = ClaimLoop(Self.request(["a", "b"], limit: 2), settings: nil)
        _ = loop.next()
        loop.took(Self.jobs(2, of: "a"))
        #expect(Self.describe(loop.next()) == "done")
    }

    /// A failure is said by the queue whose step failed; the jobs claimed before it go with it
    /// only where they were committed (a statement of their own), not where the failure rolls
    /// them back (one transaction).
    @Test func aFailureNamesItsQueueAndKeepsOnlyCommittedJobs() {
        struct Broken: Error {}
        var loop = ClaimLoop(Self.request(["a", "b"]), settings: nil)
        _ = loop.next()
        loop.took(Self.jobs(2, of: "a"))
        _ = loop.next()
        let committed = loop.failure(Broken(), committed: true)
        #expect(committed.queue == "b" && committed.claimed.count == 2)
        let rolledBack = loop.failure(Broken(), committed: false)
        #expect(rolledBack.queue == "b" && rolledBack.claimed.isEmpty)
        // A promotion is no queue's.
        var due = ClaimLoop(Self.request(["a"]), settings: QueueSettings())
        #expect(Self.describe(due.next()) == "promote")
        #expect(due.failure(Broken(), committed: false).queue == nil)
    }
}
