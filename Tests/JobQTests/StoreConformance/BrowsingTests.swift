import Foundation
import Testing

@testable import JobQCore
@testable import JobQSQL
@testable import JobQSQLite

/// The reads and actions the dashboard is built on, on every store.
@Suite("Browsing jobs: search, delete, throughput, batches")
struct BrowsingTests {
    @Test(arguments: TestStore.all) func searchFiltersNewestFirstAndPagesByID(store: TestStore) async throws {
        let queue = try await store.open()
        var requests: [JobRequest] = []
        for index in 1...7 {
            requests.append(
                try JobRequest(
                    executor: index.isMultiple(of: 2) ? "sum" : "echo", payloadJSON: #"{"a":1,"b":2}"#,
                    options: .init(queue: index <= 4 ? "a" : "b", name: index == 3 ? "third" : nil)))
        }
        let jobs = try await queue.enqueue(contentsOf: requests)
        let ids = jobs.map(\.id)

        #expect(try await queue.jobs(matching: JobQuery()).map(\.id) == ids.reversed())
        #expect(try await queue.jobs(matching: JobQuery(queue: "a")).map(\.id) == Array(ids[0..<4].reversed()))
        #expect(try await queue.jobs(matching: JobQuery(executor: "sum")).map(\.id) == [ids[5], ids[3], ids[1]])
        #expect(try await queue.jobs(matching: JobQuery(queue: "b", executor: "echo")).map(\.id) == [ids[6], ids[4]])
        #expect(try await queue.jobs(matching: JobQuery(name: "third")).map(\.id) == [ids[2]])
        #expect(try await queue.jobs(matching: JobQuery(state: .succeeded)).isEmpty)
        let first = try await queue.jobs(matching: JobQuery(limit: 3))
        let second = try await queue.jobs(matching: JobQuery(before: first.last?.id, limit: 3))
        #expect((first + second).map(\.id) == Array(ids.reversed()[0..<6]))
        await #expect(throws: JobQueueError.self) { try await queue.jobs(matching: JobQuery(limit: 0)) }
    }

    @Test(arguments: TestStore.all) func deleteRemovesOnlyFinishedJobsOutsideWorkflowsAndLanes(store: TestStore)
        async throws
    {
        let queue = try await store.open()
        let done = try await queue.enqueue(try JobRequest(executor: "sum", payloadJSON: #"{"a":1,"b":2}"#))
        let dead = try await queue.enqueue(
            try JobRequest(executor: "fail", payloadJSON: "{}", options: .init(maxAttempts: 1)))
        let laned = try await queue.enqueue(
            try JobRequest(executor: "sum", payloadJSON: #"{"a":1,"b":2}"#, options: .init(lane: "l")))
        let flow = try await queue.submit(
            try Workflow { try WorkflowStep(executor: "sum", payloadJSON: #"{"a":1,"b":1}"#) })
        try await work(queue)
        let waiting = try await queue.enqueue(
            try JobRequest(
                executor: "sum", payloadJSON: #"{"a":1,"b":2}"#, options: .init(runAt: Date().addingTimeInterval(3600)))
        )

        try await queue.delete(dead.id)
        #expect(try await queue.job(dead.id) == nil)
        #expect(
            try await queue.events(after: 0, filter: EventFilter(jobIDs: [dead.id])).isEmpty, "its events went with it")
        try await queue.delete(done.id)
        #expect(try await queue.job(done.id) == nil)

        let step = try #require(try await queue.workflow(flow)?.jobs.first)
        for (id, why) in [(waiting.id, "scheduled"), (laned.id, "lane"), (step.id, "workflow")] {
            await #expect(throws: JobQueueError.self, "\(why)") { try await queue.delete(id) }
            #expect(try await queue.job(id) != nil, "\(why): left as it was")
        }
        await #expect(throws: JobQueueError.self) { try await queue.delete(999_999) }
    }

    @Test(arguments: TestStore.all) func throughputCountsWhatFinishedInTheWindowByInterval(store: TestStore)
        async throws
    {
        let queue = try await store.open()
        try await queue.enqueue(
            contentsOf: (1...3).map { _ in
                try JobRequest(executor: "sum", payloadJSON: #"{"a":1,"b":2}"#, options: .init(queue: "t"))
            })
        try await queue.enqueue(
            try JobRequest(executor: "fail", payloadJSON: "{}", options: .init(queue: "t", maxAttempts: 1)))
        let later = try await queue.enqueue(
            try JobRequest(
                executor: "sum", payloadJSON: #"{"a":1,"b":2}"#,
                options: .init(queue: "t", runAt: Date().addingTimeInterval(60))))
        try await queue.cancel(later.id)
        try await work(queue, queues: ["t"])
        let hour = try #require(
            try await queue.throughput(of: ["t", "empty"], over: .seconds(3600), interval: .seconds(300)).first {
                $0.queue == "t"
            })
        #expect(hour.succeeded.count == 12)
        #expect(
            hour.succeeded.last == 3 && hour.succeeded.dropLast().allSatisfy { $0 == 0 }, "all in the latest interval")
        #expect(hour.dead.last == 1 && hour.cancelled.last == 1 && hour.total == 5)
        let empty = try await queue.throughput(of: ["empty"])
        #expect(empty.count == 1 && empty[0].total == 0)
        await #expect(throws: JobQueueError.self) {
            try await queue.throughput(of: ["t"], over: .seconds(60), interval: .zero)
        }
    }

    @Test(arguments: TestStore.all) func batchesAreListedNewestFirst(store: TestStore) async throws {
        let queue = try await store.open()
        _ = try await queue.createBatch("first")
        try await Task.sleep(for: .milliseconds(5))
        _ = try await queue.createBatch("second")
        #expect(try await queue.batches().map(\.name) == ["second", "first"])
        #expect(try await queue.batches(limit: 1).map(\.name) == ["second"])
    }
}
