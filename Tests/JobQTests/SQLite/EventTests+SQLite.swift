import Foundation
import Synchronization
import Testing

@testable import JobQCore
@testable import JobQSQL
@testable import JobQSQLite

/// EventTests on the SQLite store only (a file, a restart, a second connection, SQLite's own locks);
/// the tests every store passes are in StoreConformance/.
extension EventTests {
    @Test func feedResumesAcrossRestartsWithNoGapAndNoDuplicate() async throws {
        let store = try TemporaryStore()
        var queue: JobQueue? = try store.open()
        for index in 1...40 { try await queue!.enqueue(SumExecutor.self, .init(a: index, b: 1)) }
        try await work(queue!)
        let all = try await queue!.events(after: 0, limit: 100_000)
        // Read part of the feed, "crash", reopen, and resume from the last cursor seen.
        var received: [JobEvent] = []
        for try await event in queue!.events(since: 0) {
            received.append(event)
            if received.count == 37 { break }
        }
        queue = nil
        let reopened = try store.open()
        for index in 1...10 { try await reopened.enqueue(SumExecutor.self, .init(a: index, b: 2)) }
        try await work(reopened)
        let expected = try await reopened.events(after: 0, limit: 100_000)
        for try await event in reopened.events(since: received.last!.id) {
            received.append(event)
            if received.count == expected.count { break }
        }
        #expect(received.map(\.id) == expected.map(\.id))
        #expect(Set(received.map(\.id)).count == received.count)
        #expect(expected.count > all.count)
    }
}
