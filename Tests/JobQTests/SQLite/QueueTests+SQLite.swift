import Foundation
import Synchronization
import Testing

@testable import JobQCore
@testable import JobQSQL
@testable import JobQSQLite

/// QueueTests on the SQLite store only (a file, a restart, a second connection, SQLite's own locks);
/// the tests every store passes are in StoreConformance/.
extension QueueTests {
    @Test func invalidRequestsAreRefusedUpFront() async throws {
        #expect(throws: JobQueueError.self) { try JobRequest(executor: "sum", payloadJSON: "{not json") }
        let big = "\"" + String(repeating: "x", count: JobRequest.maximumPayloadBytes) + "\""
        #expect(throws: JobQueueError.self) { try JobRequest(executor: "echo", payloadJSON: big) }
        let queue = try JobQueue.inMemory()
        var request = try JobRequest(executor: "sum", payloadJSON: "{}")
        request.options.queue = ""
        await #expect(throws: JobQueueError.self) { try await queue.enqueue(request) }
        #expect(try await queue.jobs().isEmpty)
    }
}
