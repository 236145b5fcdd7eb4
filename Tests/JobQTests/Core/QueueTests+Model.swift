import Foundation
import Synchronization
import Testing

@testable import JobQCore
@testable import JobQSQL
@testable import JobQSQLite

/// QueueTests on the model alone, without a store; the tests every store passes are in
/// StoreConformance/.
extension QueueTests {
    @Test func backoffGrowsAndIsCapped() {
        let backoff = RetryBackoff(base: .seconds(1), maximum: .seconds(60), jitter: 0)
        #expect(backoff.delay(afterAttempt: 1) == .seconds(1))
        #expect(backoff.delay(afterAttempt: 4) == .seconds(8))
        #expect(backoff.delay(afterAttempt: 30) == .seconds(60))
        let jittered = RetryBackoff(base: .seconds(10), maximum: .seconds(60), jitter: 0.2)
        for _ in 0..<50 {
            let delay = jittered.delay(afterAttempt: 1)
            #expect(delay >= .seconds(8) && delay <= .seconds(12))
        }
    }
}
