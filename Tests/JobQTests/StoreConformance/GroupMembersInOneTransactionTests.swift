import Foundation
import JobQ
import Testing

@testable import JobQCore
@testable import JobQSQL

/// Members of a workflow group whose successes a worker records in one transaction: written
/// many to a statement, with the group's counters moved once by their number. The group still
/// finishes exactly once, after its members' events, with what follows from it (the next step
/// of a sequence) in the same transaction; a member's death in the same batch still fails a
/// fail-fast group; a batch written again after it committed counts nothing twice; and the
/// leaves of a tree (whose success makes no more jobs) count the same way.
@Suite("Group members recorded together")
struct GroupMembersInOneTransactionTests {
    private static func step(_ index: Int) throws -> WorkflowNode {
        .step(WorkflowStep(try JobRequest(SumExecutor.self, .init(a: index, b: 0))))
    }

    @Test(arguments: TestStore.all) func aGroupFinishesOnceWhenItsLastMembersSucceedTogether(store: TestStore)
        async throws
    {
        let queue = try await store.open()
        let members = try (1...5).map(Self.step)
        let after = try Self.step(100)
        let id = try await queue.submit(
            Workflow(root: WorkflowGroup(.sequence, [.group(WorkflowGroup(.parallel, members)), after])))
        let claimed = try await queue.store.claim(
            queues: ["default"], limit: 10, workerID: "w", lease: .seconds(30), startingNow: 10)
        #expect(claimed.count == 5, "the step after the group waits for it")

        let first = try await queue.store.recordOutcomes(
            claimed.prefix(3).map { ($0, .succeeded(resultJSON: #"{"sum":1}"#)) }, starting: [], workerID: "w")
        #expect(first.outcomes.isEmpty)
        var status = try #require(try await queue.workflow(id))
        guard case .group(let parallel) = status.root.members[0] else {
            Issue.record("the sequence's first member is the parallel group")
            return
        }
        #expect(parallel.counts == .init(total: 5, succeeded: 3, failed: 0, cancelled: 0))
        #expect(parallel.state == .running)

        let cursor = try await queue.latestEventID()
        let last = Array(claimed.suffix(2).map { ($0, AttemptOutcome.succeeded(resultJSON: #"{"sum":1}"#)) })
        let second = try await queue.store.recordOutcomes(last, starting: [], workerID: "w")
        #expect(second.outcomes.isEmpty)
        // Only this batch's: on PostgreSQL the cursor may still stand before the claim's (these
        // jobs' `started` too) and the first batch's events (see
        // `aTreeFinishesOnceWhenItsLeavesSucceedTogether`).
        let lastIDs = Set(last.map(\.0.id))
        let events = try await queue.events(after: cursor, filter: EventFilter()).filter {
            $0.kind == .group || ($0.kind != .started && $0.jobID.map(lastIDs.contains) == true)
        }
        #expect(
            events.map(\.kind) == [.succeeded, .succeeded, .group],
            "the members' events, then the group's: \(events.map(\.kind))")
        status = try #require(try await queue.workflow(id))
        guard case .group(let finished) = status.root.members[0], case .job(let next) = status.root.members[1] else {
            Issue.record("the workflow keeps its shape")
            return
        }
        #expect(finished.counts == .init(total: 5, succeeded: 5, failed: 0, cancelled: 0))
        #expect(finished.state == .succeeded)
        #expect(next.state == .ready, "the group's success released the next step in the same transaction")

        // The same batch written again (its first answer lost): neither refused nor counted twice.
        let again = try await queue.store.recordOutcomes(last, starting: [], workerID: "w")
        #expect(again.outcomes.isEmpty)
        status = try #require(try await queue.workflow(id))
        guard case .group(let unchanged) = status.root.members[0] else { return }
        #expect(unchanged.counts == finished.counts && unchanged.state == .succeeded)
        #expect(try await queue.events(after: 0, filter: EventFilter(kinds: [.group])).count == 1)

        let tail = try await queue.store.claim(
            queues: ["default"], limit: 10, workerID: "w", lease: .seconds(30), startingNow: 10)
        #expect(tail.map(\.id) == [next.id])
        _ = try await queue.store.recordOutcomes(
            tail.map { ($0, .succeeded(resultJSON: #"{"sum":100}"#)) }, starting: [], workerID: "w")
        status = try #require(try await queue.workflow(id))
        #expect(status.state == .succeeded)
        #expect(status.root.counts == .init(total: 2, succeeded: 2, failed: 0, cancelled: 0))
        #expect(try await queue.events(after: 0, filter: EventFilter(kinds: [.workflow])).count == 1)
    }

    @Test(arguments: TestStore.all) func aDeathBesideSuccessesInOneTransactionFailsAFailFastGroupOnce(
        store: TestStore
    ) async throws {
        let queue = try await store.open()
        let id = try await queue.submit(
            Workflow(root: WorkflowGroup(.parallel, try (1...3).map(Self.step), onFailure: .fail)))
        let claimed = try await queue.store.claim(
            queues: ["default"], limit: 10, workerID: "w", lease: .seconds(30), startingNow: 10)
        #expect(claimed.count == 3)
        let outcomes: [(job: ClaimedJob, outcome: AttemptOutcome)] = [
            (claimed[0], .succeeded(resultJSON: "{}")), (claimed[1], .dead(error: "boom", timedOut: false)),
            (claimed[2], .succeeded(resultJSON: "{}"))
        ]
        let refused = try await queue.store.recordOutcomes(outcomes, starting: [], workerID: "w").outcomes
        #expect(!refused.contains(claimed[1].id), "the death is recorded")

        let status = try #require(try await queue.workflow(id))
        #expect(status.state == .failed)
        #expect(status.root.state == .failed)
        var states: [JobState] = []
        for job in claimed {
            let state = try #require(try await queue.job(job.id)).state
            states.append(state)
            // A success the group's failure came before is refused, its job cancelled with the group.
            #expect(refused.contains(job.id) == (state == .cancelled), "job \(job.id) is \(state)")
        }
        #expect(states[1] == .dead)
        #expect(states.allSatisfy { [.succeeded, .dead, .cancelled].contains($0) })
        // The group counts what ended before it did: its members' ends after that are the
        // group's doing, not news to it.
        let counts = status.root.counts
        #expect(counts.failed == 1 && counts.cancelled == 0, "\(counts)")
        #expect(counts.succeeded == states.filter { $0 == .succeeded }.count, "\(counts) \(states)")
        #expect(try await queue.events(after: 0, filter: EventFilter(kinds: [.group])).count == 1)
        #expect(try await queue.events(after: 0, filter: EventFilter(kinds: [.workflow])).count == 1)
    }

    @Test(arguments: TestStore.all) func aTreeFinishesOnceWhenItsLeavesSucceedTogether(store: TestStore) async throws {
        let queue = try await store.open()
        let tree = TreeNode(Cookbook.Book.self) { TreeNode(Cookbook.Image.self, name: "cover", each: "/recipeIDs") }
        let id = try await queue.submit(tree, input: "a-cookbook")
        let root = try await queue.store.claim(
            queues: ["default"], limit: 10, workerID: "w", lease: .seconds(30), startingNow: 10)
        #expect(root.count == 1)
        _ = try await queue.store.recordOutcomes(
            [(root[0], .succeeded(resultJSON: #"{"recipeIDs":["r1","r2","r3"]}"#))], starting: [], workerID: "w")
        let leaves = try await queue.store.claim(
            queues: ["default"], limit: 10, workerID: "w", lease: .seconds(30), startingNow: 10)
        #expect(leaves.count == 3, "the root's success made a leaf per element")

        let cursor = try await queue.latestEventID()
        let refused = try await queue.store.recordOutcomes(
            leaves.map { ($0, .succeeded(resultJSON: #"{"image":"x"}"#)) }, starting: [], workerID: "w")
        #expect(refused.outcomes.isEmpty)
        // On PostgreSQL the cursor may still stand before the claim's `started` events: a
        // transaction of another test's database, older than the claim, holds the feed's
        // horizon back (`latestEventID` never waits for it; a follower from there sees them).
        let kinds = try await queue.events(after: cursor, filter: EventFilter()).map(\.kind).filter { $0 != .started }
        #expect(Array(kinds.prefix(3)) == [.succeeded, .succeeded, .succeeded], "the leaves first: \(kinds)")
        #expect(kinds.filter { $0 == .tree }.count == 1 && kinds.last == .workflow, "\(kinds)")
        let status = try #require(try await queue.workflow(id))
        #expect(status.state == .succeeded)
        #expect(status.jobs.count == 4 && status.jobs.allSatisfy { $0.state == .succeeded })
    }
}
