import Foundation
import Testing

@testable import JobQCore
@testable import JobQSQL

/// The cases a review found the stores reading differently, one by one, on every store.
@Suite("What a payload filter means")
struct PayloadFilterMeaningTests {
    @Test(arguments: TestStore.all) func theCasesTheStoresOnceReadDifferently(store: TestStore) async throws {
        let queue = try await store.open()
        // Names that read as array indexes are refused in every pointer, on every store.
        for expression in ["/a/+0 = 5", "/a/-1 = 6", #""/a/ 1" = 6"#, "/a/0 = 5"] {
            #expect(throws: JobQueueError.self, "\(expression)") { try JobFilter(expression) }
        }
        // Duplicate names are refused as the job enters; nothing is stored.
        #expect(throws: JobQueueError.self) {
            try JobRequest(executor: "echo", payloadJSON: #"{"c":"first","c":"second"}"#)
        }
        #expect(throws: JobQueueError.self) {
            try JobRequest(executor: "echo", payloadJSON: #"{"o":{"k":1,"\u006b":2}}"#)
        }
        // A NUL can be in no stored text: a filter that looks for one is refused.
        #expect(throws: JobQueueError.self) { try JobFilter(#"/a = "\u0000""#) }
        // Numbers beyond what both stores compare exactly are refused where they enter.
        #expect(throws: JobQueueError.self) { try JobRequest(executor: "echo", payloadJSON: #"{"n":1e10001}"#) }
        #expect(throws: JobQueueError.self) { try JobFilter("/n > 1e10001") }

        let escaped = try await queue.enqueue(try JobRequest(executor: "echo", payloadJSON: #"{"caf\u00e9":1}"#))
        #expect(escaped.payloadJSON == #"{"café":1}"#, "an escaped name is stored plainly: the same JSON value")
        let big = try await queue.enqueue(
            try JobRequest(executor: "echo", payloadJSON: #"{"n":9223372036854775808,"m":0.1}"#))
        let bigger = try await queue.enqueue(
            try JobRequest(executor: "echo", payloadJSON: #"{"n":9223372036854775809,"m":1e-1}"#))
        func ids(_ expression: String) async throws -> [JobID] {
            try await queue.jobs(where: try JobFilter(expression)).map(\.id).sorted()
        }
        #expect(try await ids("/café = 1") == [escaped.id])
        // Beyond 64-bit integers, and between two numbers one double apart: exactly.
        #expect(try await ids("/n = 9223372036854775808") == [big.id])
        #expect(try await ids("/n > 9223372036854775808") == [bigger.id])
        #expect(try await ids("/n >= 9.223372036854775808e18") == [big.id, bigger.id])
        #expect(try await ids("/n < 9223372036854775809") == [big.id])
        #expect(try await ids("/m = 0.1") == [big.id, bigger.id], "0.1 and 1e-1 are one number")
        #expect(try await ids("/m = 0.10000000000000001").isEmpty, "a double would have taken it for 0.1")
    }
}
