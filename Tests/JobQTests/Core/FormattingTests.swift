import Foundation
import Testing

@testable import JobQCore
@testable import JobQSQL
@testable import JobQSQLite

/// The hand-written JSON and date text of events must equal what Foundation would write.
@Suite struct FormattingTests {
    /// Same shape as Foundation's text, and the same instant to the millisecond (Foundation
    /// itself rounds some fractions one millisecond lower, through its own floating point).
    @Test func isoDatesMatchFoundationsFormatStyle() async throws {
        let style = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
        for (seconds, text) in [
            (0.0, "1970-01-01T00:00:00.000Z"), (951_782_400.25, "2000-02-29T00:00:00.250Z"),
            (4_107_542_399.5, "2100-02-28T23:59:59.500Z")
        ] {
            #expect(ISO8601.string(Date(timeIntervalSince1970: seconds)) == text)
        }
        // Foundation's formatter is slow in debug builds: the samples run on a thread of their
        // own, so they do not hold up the tasks of the tests running beside this one.
        let mismatches = try await onThread { () -> [String] in
            var generator = SystemRandomNumberGenerator()
            var mismatches: [String] = []
            for _ in 0..<500 {
                let date = Date(timeIntervalSince1970: Double.random(in: 0..<253_402_300_799, using: &generator))
                let ours = ISO8601.string(date)
                let foundations = date.formatted(style)
                let parsed = ISO8601.parse(ours)?.timeIntervalSince1970 ?? .nan
                if ours.count != foundations.count || ours.prefix(11) != foundations.prefix(11)
                    || !(abs(parsed - date.timeIntervalSince1970) < 0.0011)
                {
                    mismatches.append("\(ours) vs \(foundations) for \(date.timeIntervalSince1970)")
                }
            }
            return mismatches
        }.value
        #expect(mismatches.isEmpty, "\(mismatches.prefix(5))")
    }

    @Test func jsonStringsEscapeOnlyWhatTheyMust() throws {
        for text in ["plain", "", "quote \" and \\ backslash", "tab\tnew\nline\r", "\u{01}ctl", "ünïcødé 🎉"] {
            let literal = JSONText.string(text)
            let decoded =
                try JSONSerialization.jsonObject(with: Data(literal.utf8), options: [.fragmentsAllowed]) as? String
            #expect(decoded == text)
        }
        #expect(JSONText.string("plain") == "\"plain\"")
    }

    @Test func eventDataObjectsAreValidJSON() throws {
        var builder = JSONObjectBuilder()
        #expect(builder.text == "{}")
        builder.add("attempt", int: 2)
        builder.add("skipped", string: nil)
        builder.add("error", string: "bad \"input\"")
        builder.add("result", raw: #"{"sum":3}"#)
        builder.add("willRetry", bool: false)
        builder.add("fraction", number: 0.5)
        let object = try #require(JSONSerialization.jsonObject(with: Data(builder.text.utf8)) as? [String: Any])
        #expect(object.count == 5)
        #expect(builder.text.hasPrefix(#"{"attempt":2,"error":"bad \"input\"","result":{"sum":3}"#))
    }
}
