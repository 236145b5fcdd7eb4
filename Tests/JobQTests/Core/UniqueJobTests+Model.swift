import Foundation
import GRDB
import Testing

@testable import JobQCore
@testable import JobQSQL
@testable import JobQSQLite

/// UniqueJobTests on the model alone, without a store; the tests every store passes are in
/// StoreConformance/.
extension UniqueJobTests {
    @Test func jobLinesCarryUniqueKeys() throws {
        let plain = try JobRequest(jsonLine: #"{"executor": "echo", "unique": "k1"}"#)
        #expect(plain.options.unique == UniqueKey("k1"))
        let full = try JobRequest(
            jsonLine: #"{"executor": "echo", "unique": {"key": "k2", "for": "1h", "states": ["succeeded"]}}"#)
        #expect(full.options.unique == UniqueKey("k2", for: .seconds(3600), finishedStates: [.succeeded]))
        #expect(throws: JobQueueError.self) { try JobRequest(jsonLine: #"{"executor": "echo", "unique": 5}"#) }
        #expect(throws: JobQueueError.self) {
            try JobRequest(jsonLine: #"{"executor": "echo", "unique": {"key": "k", "states": ["sleeping"]}}"#)
        }
        #expect(throws: JobQueueError.self) {
            try JobRequest(jsonLine: #"{"executor": "echo", "unique": {"key": "k", "for": "1h", "states": ["ready"]}}"#)
        }
    }
}
