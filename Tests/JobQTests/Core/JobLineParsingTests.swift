import Foundation
import Testing

@testable import JobQCore

/// Plain job lines are read by jobq's own parser (fast), every other line by Foundation's
/// decoder: for every line the first takes, both must read the same fields, and the lines it
/// must leave to Foundation (escapes, fractions, duplicate keys, deep nesting, invalid JSON) it
/// leaves.
@Suite("Job lines: the plain-line parser agrees with Foundation's")
struct JobLineParsingTests {
    static func foundation(_ line: String) -> [String: JSONValue]? {
        guard case .object(let fields)? = try? JSONDecoder.jobq.decode(JSONValue.self, from: Data(line.utf8))
        else { return nil }
        return fields
    }

    @Test(arguments: [
        #"{"executor": "sum", "payload": {"a": 1, "b": 2}}"#,
        #"{"executor":"sum","payload":{"a":-12,"b":0,"c":9223372036854775807,"d":-9223372036854775808}}"#,
        #"{"executor": "mail", "payload": {"to": "zoë@example.com", "tags": ["a", "b"], "ok": true, "x": null}}"#,
        #"{"executor": "e", "payload": {}, "queue": "q", "priority": 5, "after": [1, {"id": 2, "policy": "ignore"}]}"#,
        #"  {"executor": "e", "payload": [[[]]], "unique": {"key": "k", "for": "1h"}}  "#,
        #"{"executor": "e", "payload": {"日本": "語", "emoji": "🚀"}}"#
    ])
    func plainLinesReadAsFoundationReadsThem(line: String) throws {
        let plain = try #require(JobRequest.plainObject(line), "a plain line takes the fast path")
        #expect(plain == Self.foundation(line))
        // And the request built from it is the one Foundation's reading builds.
        let request = try JobRequest(jsonLine: line)
        let fields = try #require(Self.foundation(line))
        let payload = String(decoding: try JSONEncoder.jobq.encode(fields["payload"] ?? .object([:])), as: UTF8.self)
        #expect(request.payloadJSON == payload)
    }

    @Test(arguments: [
        #"{"executor": "e", "payload": {"a": "line\nbreak"}}"#,  // an escape
        #"{"executor": "e", "payload": {"a": 1.5}}"#,  // a fraction
        #"{"executor": "e", "payload": {"a": 1e3}}"#,  // an exponent
        #"{"executor": "e", "payload": {"a": 01}}"#,  // a leading zero (invalid)
        #"{"executor": "e", "payload": {"a": 9223372036854775808}}"#,  // beyond Int64
        #"{"executor": "e", "payload": {"a": 1, "a": 2}}"#,  // a key twice
        #"{"executor": "e", "payload": {"a": 1,}}"#,  // a trailing comma (invalid)
        #"{"executor": "e" "payload": {}}"#,  // a missing comma (invalid)
        #"["executor", "e"]"#,  // not an object
        #"{"executor": "e", "payload": {"a": +1}}"#,  // a plus sign (invalid)
        #"{"executor": "e", "payload": {"a": -}}"#,  // a lone minus (invalid)
        #"{"executor": "e"} trailing"#,  // text after the object (invalid)
        "{\"executor\": \"e\", \"payload\": {\"a\": \"tab\there\"}}",  // a raw control character (invalid)
        "{\"executor\": \"e\", \"payload\": " + String(repeating: "[", count: 70) + String(repeating: "]", count: 70)
            + "}"  // deeper than 64
    ])
    func otherLinesAreLeftToFoundation(line: String) {
        #expect(JobRequest.plainObject(line) == nil)
    }

    /// Random plain objects, written as JSON, read the same both ways.
    @Test func randomPlainObjectsAgree() throws {
        var generator = SystemRandomNumberGenerator()
        func value(_ depth: Int) -> String {
            switch Int.random(in: 0..<(depth > 3 ? 4 : 6), using: &generator) {
            case 0: return "null"
            case 1: return Bool.random(using: &generator) ? "true" : "false"
            case 2: return String(Int64.random(in: Int64.min...Int64.max, using: &generator))
            case 3: return "\"" + String((0..<Int.random(in: 0..<8)).map { _ in "aé語 z-_".randomElement()! }) + "\""
            case 4: return "[" + (0..<Int.random(in: 0..<4)).map { _ in value(depth + 1) }.joined(separator: ",") + "]"
            default:
                return "{"
                    + (0..<Int.random(in: 0..<4)).map { "\"k\($0)\": \(value(depth + 1))" }.joined(separator: ", ")
                    + "}"
            }
        }
        for _ in 0..<500 {
            let line = #"{"executor": "e", "payload": "# + value(0) + "}"
            let plain = try #require(JobRequest.plainObject(line), "\(line)")
            #expect(plain == Self.foundation(line), "\(line)")
        }
    }
}
