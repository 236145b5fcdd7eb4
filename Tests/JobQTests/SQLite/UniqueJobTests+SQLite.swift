import Foundation
import GRDB
import Testing

@testable import JobQCore
@testable import JobQSQL
@testable import JobQSQLite

/// UniqueJobTests on the SQLite store only (a file, a restart, a second connection, SQLite's own locks);
/// the tests every store passes are in StoreConformance/.
extension UniqueJobTests {
    @Test func theKeyIsHeldThroughRetriesAndFreedWhenTheJobFinishes() async throws {
        let store = try TemporaryStore()
        let queue = try store.open()
        let failing = try JobRequest(
            executor: "fail", payloadJSON: #"{"succeedFromAttempt":2}"#,
            options: .init(maxAttempts: 2, unique: UniqueKey("sync")))
        let job = try await queue.enqueue(failing)
        // First attempt fails; while it waits for its retry it still holds the key.
        var options = quickOptions(stopWhen: .queuesEmpty)
        options.retryBackoff = RetryBackoff(base: .seconds(30), maximum: .seconds(30), jitter: 0)
        try await work(queue, options: options)
        #expect(try await queue.job(job.id)?.state == .failed)
        #expect(try await queue.enqueue(try request(UniqueKey("sync"))).id == job.id)
        // Make it due and run it: it succeeds, finishes, and lets go of the key.
        try await queue.retry(job.id)
        try await work(queue)
        #expect(try await queue.job(job.id)?.state == .succeeded)
        let next = try await queue.enqueueReportingDuplicates(contentsOf: [try request(UniqueKey("sync"))])[0]
        #expect(!next.existed)
        #expect(next.job.id != job.id)
    }

    @Test func aPeriodKeepsTheKeyAfterTheJobFinishesThenLetsGo() async throws {
        let store = try TemporaryStore()
        let queue = try store.open()
        let key = UniqueKey("nightly", for: .seconds(3600))
        #expect(key.finishedStates == [.succeeded, .dead, .cancelled])
        let job = try await queue.enqueue(try request(key))
        try await queue.cancel(job.id)
        #expect(try await queue.enqueue(try request(key)).id == job.id, "finished within the period: still held")
        // An hour and a second later (the finish moved back rather than the clock forward):
        try await DatabaseQueue(path: store.path).write { db in
            try db.execute(
                sql: "UPDATE jobq_jobs SET finished_at = finished_at - 3601 WHERE id = ?", arguments: [job.id])
        }
        let later = try await queue.enqueueReportingDuplicates(contentsOf: [try request(key)])[0]
        #expect(!later.existed)
        #expect(later.job.id != job.id)
    }
}
