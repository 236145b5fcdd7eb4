import Foundation
import Testing

@testable import JobQCore
@testable import JobQSQL
@testable import JobQSQLite

@Suite("Dependencies and lanes")
struct DependencyTests {
    @Test(arguments: TestStore.all) func aJobWaitsForItsDependenciesThenRuns(store: TestStore) async throws {
        let queue = try await store.open()
        let first = try await queue.enqueue(SleepExecutor.self, .init(seconds: 0.05))
        let second = try await queue.enqueue(SumExecutor.self, .init(a: 1, b: 1))
        let after = try await queue.enqueue(
            SumExecutor.self, .init(a: 2, b: 2), options: .init(after: [first.id, second.id]))
        #expect(after.state == .waiting)
        #expect(after.unmetDependencies == 2)
        try await work(queue)
        let done = try #require(try await queue.job(after.id))
        #expect(done.state == .succeeded)
        let firstDone = try #require(try await queue.job(first.id))
        #expect(done.startedAt! >= firstDone.finishedAt!, "the dependent started after its dependency finished")
    }

    @Test(arguments: TestStore.all) func dependingOnASucceededJobCountsAsMet(store: TestStore) async throws {
        let queue = try await store.open()
        let first = try await queue.enqueue(SumExecutor.self, .init(a: 1, b: 1))
        try await work(queue)
        let next = try await queue.enqueue(SumExecutor.self, .init(a: 1, b: 1), options: .init(after: [first.id]))
        #expect(next.state == .ready)
    }

    @Test(arguments: TestStore.all) func unknownIdsAndFailedDependenciesAreRefusedAndNothingIsStored(store: TestStore)
        async throws
    {
        let queue = try await store.open()
        let dead = try await queue.enqueue(FailExecutor.self, .init(), options: .init(maxAttempts: 1))
        try await work(queue)
        await #expect(throws: JobQueueError.self) {
            try await queue.enqueue(SumExecutor.self, .init(a: 1, b: 1), options: .init(after: [999]))
        }
        // Its own future id: no job may wait for one that does not exist yet, so no cycle can form.
        await #expect(throws: JobQueueError.self) {
            try await queue.enqueue(SumExecutor.self, .init(a: 1, b: 1), options: .init(after: [dead.id + 1]))
        }
        for policy in [DependencyPolicy.cancel, .fail] {
            await #expect(throws: JobQueueError.self) {
                try await queue.enqueue(
                    SumExecutor.self, .init(a: 1, b: 1), options: .init(after: [dead.id], onDependencyFailure: policy))
            }
        }
        #expect(try await queue.jobs().count == 1, "nothing was stored")
        let ignoring = try await queue.enqueue(
            SumExecutor.self, .init(a: 1, b: 1), options: .init(after: [dead.id], onDependencyFailure: .ignore))
        #expect(ignoring.state == .ready)
        #expect(ignoring.failedDependenciesJSON?.contains("\"job\":\(dead.id)") == true)
    }

    @Test(arguments: TestStore.all) func deathCascadesByEachDependentsPolicy(store: TestStore) async throws {
        let queue = try await store.open()
        let doomed = try await queue.enqueue(FailExecutor.self, .init(message: "boom"), options: .init(maxAttempts: 1))
        // Long enough that `run` starts before it ends even on a loaded machine.
        let slow = try await queue.enqueue(SleepExecutor.self, .init(seconds: 6))
        let cancelled = try await queue.enqueue(SumExecutor.self, .init(a: 1, b: 1), options: .init(after: [doomed.id]))
        let cancelledChild = try await queue.enqueue(
            SumExecutor.self, .init(a: 1, b: 1), options: .init(after: [cancelled.id]))
        let failed = try await queue.enqueue(
            SumExecutor.self, .init(a: 1, b: 1), options: .init(after: [doomed.id], onDependencyFailure: .fail))
        let ignored = try await queue.enqueue(
            SumExecutor.self, .init(a: 1, b: 1),
            options: .init(after: [doomed.id, slow.id], onDependencyFailure: .ignore))
        let ranAnyway = try await queue.enqueue(
            SumExecutor.self, .init(a: 1, b: 1), options: .init(after: [doomed.id, slow.id], onDependencyFailure: .run))
        let perEdge = try await queue.enqueue(
            SumExecutor.self, .init(a: 1, b: 1),
            options: .init(after: [doomed.id], onDependencyFailure: .fail, dependencyPolicies: [doomed.id: .ignore]))
        try await work(queue)

        let c = try #require(try await queue.job(cancelled.id))
        #expect(c.state == .cancelled)
        #expect(c.error?.contains("dependency job \(doomed.id) (fail) died: boom") == true)
        #expect(try await queue.job(cancelledChild.id)?.state == .cancelled, "the cancel cascades down the chain")
        let f = try #require(try await queue.job(failed.id))
        #expect(f.state == .dead && f.error?.contains("boom") == true)
        let i = try #require(try await queue.job(ignored.id))
        let s = try #require(try await queue.job(slow.id))
        #expect(i.state == .succeeded && i.startedAt! >= s.finishedAt!, "ignore still waits for the others")
        let r = try #require(try await queue.job(ranAnyway.id))
        #expect(
            r.state == .succeeded && r.startedAt! < s.finishedAt!,
            "run starts without waiting for the others: r attempt \(r.attempt) started \(r.startedAt!.timeIntervalSince1970) created \(r.createdAt.timeIntervalSince1970), s started \(s.startedAt!.timeIntervalSince1970) finished \(s.finishedAt!.timeIntervalSince1970)"
        )
        #expect(r.failedDependenciesJSON?.contains("boom") == true)
        #expect(try await queue.job(perEdge.id)?.state == .succeeded, "the edge's policy overrides the job's")
    }

    @Test(arguments: TestStore.all) func chainsAndDiamondsCancelledInTheMiddleLeaveNothingWaiting(store: TestStore)
        async throws
    {
        let queue = try await store.open()
        // A diamond: top -> (left, right) -> bottom, then a chain of 20 below it.
        let top = try await queue.enqueue(SleepExecutor.self, .init(seconds: 0.2))
        let left = try await queue.enqueue(SumExecutor.self, .init(a: 1, b: 1), options: .init(after: [top.id]))
        let right = try await queue.enqueue(SumExecutor.self, .init(a: 1, b: 1), options: .init(after: [top.id]))
        let bottom = try await queue.enqueue(
            SumExecutor.self, .init(a: 1, b: 1), options: .init(after: [left.id, right.id]))
        var previous = bottom.id
        for _ in 0..<20 {
            previous = try await queue.enqueue(SumExecutor.self, .init(a: 1, b: 1), options: .init(after: [previous]))
                .id
        }
        try await queue.cancel(right.id)
        try await work(queue)
        #expect(try await queue.jobs(state: .waiting).isEmpty, "no job is left waiting")
        #expect(try await queue.job(left.id)?.state == .succeeded)
        #expect(try await queue.job(bottom.id)?.state == .cancelled)
        #expect(try await queue.job(previous)?.state == .cancelled)
    }

    @Test(arguments: TestStore.all) func lanesRunOneAtATimeInAppendOrder(store: TestStore) async throws {
        let queue = try await store.open()
        var ids: [JobID] = []
        for index in 0..<12 {
            let job = try await queue.enqueue(
                SleepExecutor.self, .init(seconds: index % 3 == 0 ? 0.03 : 0), options: .init(lane: "l"))
            ids.append(job.id)
        }
        #expect(try await queue.job(ids[0])?.state == .ready, "appending to an idle lane starts the job at once")
        #expect(try await queue.job(ids[1])?.state == .waiting)
        try await work(queue, concurrency: 8)
        let jobs = try await ids.asyncMap { try #require(try await queue.job($0)) }
        for (earlier, later) in zip(jobs, jobs.dropFirst()) {
            #expect(later.startedAt! >= earlier.finishedAt!, "job \(later.id) started after job \(earlier.id) finished")
        }
        let drained = try await queue.events(after: 0, filter: EventFilter(kinds: [.lane]))
        #expect(drained.count == 1)
        // An idle lane starts a new job at once, and drains again.
        let more = try await queue.enqueue(SumExecutor.self, .init(a: 1, b: 1), options: .init(lane: "l"))
        #expect(more.state == .ready)
        try await work(queue)
        #expect(try await queue.events(after: 0, filter: EventFilter(kinds: [.lane])).count == 2)
    }

    @Test(arguments: TestStore.all) func aHaltedLaneWaitsUntilResumed(store: TestStore) async throws {
        let queue = try await store.open()
        let first = try await queue.enqueue(
            FailExecutor.self, .init(), options: .init(maxAttempts: 1, lane: "h", laneOnFailure: .halt))
        let second = try await queue.enqueue(SumExecutor.self, .init(a: 1, b: 1), options: .init(lane: "h"))
        try await work(queue, options: quickOptions(stopWhen: .queuesEmpty))
        #expect(try await queue.job(first.id)?.state == .dead)
        #expect(try await queue.job(second.id)?.state == .waiting)
        let lane = try #require(try await queue.lane("h"))
        #expect(lane.haltedBy == first.id && lane.jobs.map(\.id) == [first.id, second.id])
        // Appending to a halted lane waits too.
        let third = try await queue.enqueue(SumExecutor.self, .init(a: 1, b: 1), options: .init(lane: "h"))
        #expect(third.state == .waiting)
        try await queue.resumeLane("h")
        try await work(queue)
        #expect(try await queue.job(second.id)?.state == .succeeded)
        #expect(try await queue.job(third.id)?.state == .succeeded)
        await #expect(throws: JobQueueError.self) { try await queue.resumeLane("h") }
    }
}

extension Sequence {
    func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var values: [T] = []
        for element in self { values.append(try await transform(element)) }
        return values
    }
}
