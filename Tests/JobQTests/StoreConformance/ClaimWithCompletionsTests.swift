import Foundation
import JobQ
import Testing

@testable import JobQCore
@testable import JobQSQL

/// A claim made in the transaction that records a worker's completions
/// (``JobStore/recordOutcomes(_:starting:workerID:claiming:)``): on a store that claims with its
/// completions, the job a completion unlocks is claimed by the same commit, and a claim that
/// fails is undone alone; on one that does not, the completions are recorded and nothing is
/// claimed (the worker's claim loop claims).
@Suite("Claims made with completions")
struct ClaimWithCompletionsTests {
    @Test(arguments: TestStore.all) func theCommitThatUnlocksADependentClaimsIt(store: TestStore) async throws {
        let queue = try await store.open()
        let first = try await queue.enqueue(try JobRequest(executor: "echo", payloadJSON: "{}"))
        let second = try await queue.enqueue(
            try JobRequest(executor: "echo", payloadJSON: "{}", options: .init(after: [first.id])))
        let claimed = try await queue.store.claim(
            queues: ["default"], limit: 10, workerID: "w", lease: .seconds(30), startingNow: 10)
        #expect(claimed.map(\.id) == [first.id], "the dependent waits")
        let report = try await queue.store.recordOutcomes(
            [(claimed[0], .succeeded(resultJSON: "{}"))], starting: [], workerID: "w",
            claiming: ClaimRequest(queues: ["default"], limit: 10, lease: .seconds(30), startingNow: 1))
        #expect(report.refusedOutcomes.isEmpty && report.claimFailure == nil)
        #expect(try await queue.job(first.id)?.state == .succeeded)
        let next = try #require(try await queue.job(second.id))
        let started = try await queue.events(after: 0, filter: EventFilter(jobIDs: [second.id], kinds: [.started]))
        if queue.store.claimsWithCompletions {
            #expect(report.claimed.map(\.id) == [second.id])
            #expect(report.claimed.first?.startRecorded == true, "it goes to a free slot: its start is recorded")
            #expect(next.state == .running && next.attempt == 1 && next.startedAt != nil, "\(next)")
            #expect(started.count == 1)
        } else {
            #expect(report.claimed.isEmpty)
            #expect(next.state == .ready && next.attempt == 0, "\(next)")
            #expect(started.isEmpty)
        }
    }

    /// The claim's part fails on a queue whose job it cannot read: the completion is committed,
    /// and nothing of the claim is, not even what it took from a healthy queue before it.
    @Test(arguments: TestStore.all) func aClaimThatFailsIsUndoneAloneAndTheCompletionsCommit(store: TestStore)
        async throws
    {
        let (queue, healthy, poison) = try await IsolationTests.poisonedStore(store)
        let bystander = try await queue.enqueue(
            try JobRequest(executor: "echo", payloadJSON: "{}", options: .init(queue: "thirdq")))
        let claimed = try await queue.store.claim(
            queues: ["otherq"], limit: 1, workerID: "w", lease: .seconds(30), startingNow: 1)
        #expect(claimed.map(\.id) == [healthy])
        let report = try await queue.store.recordOutcomes(
            [(claimed[0], .succeeded(resultJSON: "{}"))], starting: [], workerID: "w",
            claiming: ClaimRequest(queues: ["thirdq", "poisonq"], limit: 10, lease: .seconds(30), startingNow: 10))
        #expect(try await queue.job(healthy)?.state == .succeeded, "the completion is committed")
        #expect(report.claimed.isEmpty)
        let third = try #require(try await queue.job(bystander.id))
        let started = try await queue.events(after: 0, filter: EventFilter(jobIDs: [bystander.id], kinds: [.started]))
        #expect(started.isEmpty, "no event of the undone claim is written")
        if queue.store.claimsWithCompletions {
            let failure = try #require(report.claimFailure as? QueueClaimFailure)
            #expect(failure.queue == "poisonq", "\(failure)")
            #expect(third.state == .ready && third.attempt == 0, "the claim of thirdq is undone too: \(third)")
            #expect(try await queue.job(poison)?.state == .ready)
        } else {
            #expect(report.claimFailure == nil)
        }
    }
}
