import Foundation
import Testing

@testable import JobQCore

/// The built-in executors' text path gives what the typed path gives, for the payloads it takes,
/// and leaves the others (with their errors) to the typed path.
@Suite("Executors on the payload's text")
struct PayloadTextExecutorTests {
    private static let context = JobContext(
        jobID: 1, executor: SumExecutor.name, queue: "default", attempt: 1, maxAttempts: 3, deadline: nil,
        snoozes: 0, checkpointJSON: nil, workflowID: nil, progressWriter: nil, sharedJSON: nil, sharedWrites: nil,
        failedDependenciesJSON: nil)

    /// What the typed path alone answers: the output's text, or the error's description.
    private func typed(_ payload: String) async -> String {
        do {
            let input = try JSONDecoder.jobq.decode(SumExecutor.Input.self, from: Data(payload.utf8))
            let output = try await SumExecutor().run(input, context: Self.context)
            return String(decoding: try JSONEncoder.jobq.encode(output), as: UTF8.self)
        } catch {
            return "error: \(error)"
        }
    }

    /// What the pool runs: the text path where it answers, the typed path otherwise.
    private func pooled(_ payload: String) async -> String {
        do {
            return try await ErasedExecutor(SumExecutor()).run(payload, Self.context)
        } catch is PayloadDecodingError {
            return "undecodable"
        } catch {
            return "error: \(error)"
        }
    }

    @Test func sumAnswersAsTheTypedPathDoes() async throws {
        let answered = [
            #"{"a":1,"b":2}"#, #"{"a": -40, "b": 2}"#, #"{"b":2,"a":1}"#, #"{"a":1,"b":2,"c":"ignored"}"#,
            #"{"a":9223372036854775806,"b":1}"#, #"{"a":-9223372036854775808,"b":0}"#, #" { "a" : 0 , "b" : 0 } "#
        ]
        for payload in answered {
            let text = try #require(SumExecutor().outputText(forPayload: payload, context: Self.context))
            #expect(text == (await typed(payload)), "payload \(payload)")
            #expect(text == (await pooled(payload)))
        }
    }

    @Test func sumLeavesEverythingElseToTheTypedPath() async throws {
        let left = [
            #"{"a":1.5,"b":2}"#, #"{"a":1e3,"b":2}"#, #"{"a":-0,"b":2}"#, #"{"a":"1","b":2}"#, #"{"a":1}"#,
            #"{"a":1,"a":2,"b":3}"#, #"{"a":9223372036854775807,"b":1}"#, #"{"a":9223372036854775808,"b":1}"#,
            #"[1,2]"#, #"{"a":null,"b":2}"#, "not json"
        ]
        for payload in left {
            #expect(SumExecutor().outputText(forPayload: payload, context: Self.context) == nil, "payload \(payload)")
        }
        // The pool's answers for them are the typed path's.
        #expect(await pooled(#"{"a":1.5,"b":2}"#) == #"{"sum":3.5}"#)
        #expect(await pooled(#"{"a":9223372036854775807,"b":1}"#).contains("overflows a 64-bit integer"))
        #expect(await pooled(#"{"a":1}"#) == "undecodable")
    }
}
