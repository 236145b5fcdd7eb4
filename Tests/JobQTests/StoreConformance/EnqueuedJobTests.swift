import Foundation
import Testing

@testable import JobQCore
@testable import JobQSQL

/// The job an enqueue returns is the job the store holds, field by field: a self-contained job's
/// is made from what was sent instead of read back (`SelfContainedJobRow`), so every column it
/// sets, and every one it leaves at its default, must read back the same.
@Suite("An enqueue returns the job as stored")
struct EnqueuedJobTests {
    /// Self-contained requests that set every column such a job has (a name, a timeout, a
    /// priority, a later run time, a payload with whitespace to be minified, text beyond ASCII),
    /// and one that is not self-contained (a unique key), read back the ordinary way.
    static func requests() throws -> [JobRequest] {
        var named = try JobRequest(executor: "echo", payloadJSON: #"{ "greeting" : "grüße ✓",  "n": [1, 2.50] }"#)
        named.options.name = "welcome mail"
        named.options.priority = -7
        named.options.maxAttempts = 9
        named.options.timeout = .milliseconds(1500)
        named.options.queue = "mail"
        var later = try JobRequest(executor: "sum", payloadJSON: #"{"a":1,"b":2}"#)
        later.options.runAt = Date().addingTimeInterval(3600)
        var keyed = try JobRequest(executor: "sum", payloadJSON: #"{"a":3,"b":4}"#)
        keyed.options.unique = UniqueKey("returned-as-stored")
        return [named, later, keyed, try JobRequest(executor: "sum", payloadJSON: "{}")]
    }

    static func expectStored(_ jobs: [Job], in queue: JobQueue) async throws {
        for job in jobs {
            let stored = try #require(try await queue.job(job.id))
            #expect(job == stored, "returned \(job)\nstored   \(stored)")
        }
    }

    @Test(arguments: TestStore.all)
    func oneAtATimeAndInABatch(store: TestStore) async throws {
        let queue = try await store.open()
        var jobs: [Job] = []
        for request in try Self.requests() where request.options.unique == nil {
            jobs.append(try await queue.enqueue(request))
        }
        #expect(jobs[0].payloadJSON == #"{"greeting":"grüße ✓","n":[1,2.50]}"#, "minified, the text kept")
        #expect(jobs[1].state == .scheduled && jobs[0].state == .ready)
        // A batch of self-contained jobs, and one mixing them with a unique job.
        jobs += try await queue.enqueue(contentsOf: Self.requests().filter { $0.options.unique == nil })
        jobs += try await queue.enqueue(contentsOf: Self.requests())
        try await Self.expectStored(jobs, in: queue)
    }

    @Test(arguments: TestStore.all)
    func inTheApplicationsTransaction(store: TestStore) async throws {
        let app = try await AppSide.open(store)
        defer { Task { await app.close() } }
        var jobs = try await app.enqueueReturningJobs([try Self.requests()[0]])
        jobs += try await app.enqueueReturningJobs(try Self.requests().filter { $0.options.unique == nil })
        jobs += try await app.enqueueReturningJobs(try Self.requests())
        #expect(jobs.count == 8)
        try await Self.expectStored(jobs, in: app.queue)
    }
}
