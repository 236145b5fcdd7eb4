import Foundation
import Synchronization
import Testing

@testable import JobQCore
@testable import JobQSQL
@testable import JobQSQLite

/// Bulk retry, cancel and delete on every store: each job exactly as the one-job action, what
/// that action refuses skipped and counted, one audit event, and a rerun that changes nothing.
@Suite("Bulk actions over a filter")
struct BulkActionTests {
    @Test(arguments: TestStore.all) func bulkRetryRetriesWhatMatchesOnceAndSkipsTheRest(store: TestStore) async throws {
        let queue = try await store.open()
        // 300 jobs that die (two customers), and 5 that succeed.
        var requests: [JobRequest] = []
        for index in 0..<300 {
            let customer = index.isMultiple(of: 3) ? "bob" : "acme"
            requests.append(
                try JobRequest(
                    executor: "fail", payloadJSON: #"{"customer":"\#(customer)","message":"boom"}"#,
                    options: .init(maxAttempts: 1)))
        }
        for _ in 0..<5 {
            requests.append(try JobRequest(executor: "sum", payloadJSON: #"{"a":1,"b":2,"customer":"acme"}"#))
        }
        _ = try await queue.enqueue(contentsOf: requests)
        try await work(queue, executors: [FailExecutor(), SumExecutor()], concurrency: 8)
        let since = try await queue.events(after: 0, limit: 100_000).last?.id ?? 0

        let progress = Mutex<[BulkActionProgress]>([])
        let filter = try JobFilter(#"/customer = "acme""#)
        let report = try await queue.perform(.retry, where: filter) { step in progress.withLock { $0.append(step) } }
        #expect(report.matched == 205)
        #expect(report.changed == 200)
        #expect(report.skippedByReason == ["succeeded": 5])
        #expect(
            report.exampleRefusals["succeeded"]?.contains("only failed, dead or cancelled jobs can be retried") == true)
        let steps = progress.withLock { $0 }
        #expect(steps.count >= 2, "300 jobs take more than one batch of at most 100 first")
        #expect(steps.last?.done == 205)
        #expect(steps.last?.total == 205)
        #expect(steps.map(\.done) == steps.map(\.done).sorted())

        #expect(try await queue.count(where: JobFilter(#"state:ready /customer = "acme""#)) == 200)
        #expect(try await queue.count(where: JobFilter("state:dead")) == 100)
        let events = try await queue.events(after: since, limit: 100_000)
        #expect(events.filter { $0.kind == .retried }.count == 200)
        #expect(Set(events.filter { $0.kind == .retried }.compactMap(\.jobID)).count == 200)
        let audits = events.filter { $0.kind == .bulk }
        try #require(audits.count == 1)
        #expect(audits[0].jobID == nil)
        #expect((audits[0].dataJSON ?? "").contains(#""action":"retry""#))
        #expect((audits[0].dataJSON ?? "").contains(#""changed":200"#))
        #expect((audits[0].dataJSON ?? "").contains(#""skipped":{"succeeded":5}"#))

        // Rerun: the retried jobs are ready now, so nothing changes and each is counted.
        let again = try await queue.perform(.retry, where: filter)
        #expect(again.changed == 0)
        #expect(again.skippedByReason == ["ready": 200, "succeeded": 5])
        #expect(try await queue.count(where: JobFilter("state:ready")) == 200)
    }

    @Test(arguments: TestStore.all) func bulkCancelAndDeleteSkipWhatTheOneJobActionsRefuse(store: TestStore)
        async throws
    {
        let queue = try await store.open()
        let ready = try await queue.enqueue(
            contentsOf: try (0..<4).map { _ in try JobRequest(executor: "echo", payloadJSON: #"{"k":1}"#) })
        let laned = try await queue.enqueue(
            try JobRequest(executor: "echo", payloadJSON: #"{"k":1}"#, options: .init(queue: "lanes", lane: "l")))
        let succeeded = try await queue.enqueue(
            try JobRequest(executor: "echo", payloadJSON: #"{"k":1}"#, options: .init(queue: "done")))
        try await work(queue, queues: ["done"])
        // A dependent still waits on job `ready[0]`: it stays referred to once cancelled.
        let dependent = try await queue.enqueue(
            try JobRequest(
                executor: "echo", payloadJSON: #"{"k":2}"#,
                options: .init(queue: "later", after: [ready[0].id], onDependencyFailure: .run)))

        let cancelled = try await queue.perform(.cancel, where: JobFilter("/k = 1"))
        #expect(cancelled.changed == 5, "four ready jobs and the laned one")
        #expect(cancelled.skippedByReason == ["already succeeded": 1])
        #expect(try await queue.job(dependent.id)?.state == .ready, "its policy runs it once its dependency ends")

        let deleted = try await queue.perform(.delete, where: JobFilter("-queue:later"))
        #expect(deleted.matched == 6)
        #expect(deleted.skippedByReason["in a lane"] == 1)
        #expect(try await queue.job(laned.id) != nil)
        #expect(try await queue.job(succeeded.id) == nil)
        #expect(try await queue.job(ready[1].id) == nil)
        // Nothing matched, nothing changed: still one audit event per action.
        let none = try await queue.perform(.delete, where: JobFilter("queue:nowhere"))
        #expect(none.matched == 0 && none.changed == 0)
        let audits = try await queue.events(after: 0, limit: 10_000).filter { $0.kind == .bulk }
        #expect(audits.count == 3)
    }

    /// A filter of as many terms as a filter may hold is acted on as it is listed (the action's
    /// own bound on the newest job once made it one term too many).
    @Test(arguments: TestStore.all) func aFilterOfTheMostTermsIsActedOn(store: TestStore) async throws {
        let queue = try await store.open()
        let job = try await queue.enqueue(try JobRequest(executor: "echo", payloadJSON: #"{"n":1}"#))
        let terms = ["state:ready"] + (1..<JobFilter.maximumTerms).map { _ in "/n = 1" }
        let filter = try JobFilter(terms.joined(separator: " "))
        #expect(try await queue.count(where: filter) == 1)
        let report = try await queue.perform(.cancel, where: filter)
        #expect(report.matched == 1 && report.changed == 1)
        #expect(try await queue.job(job.id)?.state == .cancelled)
    }

    /// Priorities are 32-bit integers on every store, checked where a job enters: one beyond is
    /// refused with the range (PostgreSQL once answered with a raw SQLSTATE 22003, SQLite took it).
    @Test(arguments: TestStore.all) func aPriorityOutOfRangeIsRefusedOnEveryStore(store: TestStore) async throws {
        let queue = try await store.open()
        for priority in [Int(Int32.max) + 1, Int(Int32.min) - 1, 3_000_000_000] {
            await #expect {
                _ = try await queue.enqueue(
                    try JobRequest(executor: "echo", payloadJSON: "{}", options: .init(priority: priority)))
            } throws: { error in
                guard case JobQueueError.invalidInput(let message) = error else { return false }
                return message.contains("priority \(priority) is out of range") && message.contains("2147483647")
            }
        }
        #expect(try await queue.jobs().isEmpty)
        let highest = try await queue.enqueue(
            try JobRequest(executor: "echo", payloadJSON: "{}", options: .init(priority: Int(Int32.max))))
        let lowest = try await queue.enqueue(
            try JobRequest(executor: "echo", payloadJSON: "{}", options: .init(priority: Int(Int32.min))))
        #expect(try await queue.job(highest.id)?.priority == Int(Int32.max))
        #expect(try await queue.job(lowest.id)?.priority == Int(Int32.min))
    }
}
