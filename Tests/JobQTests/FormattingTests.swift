import Foundation
import Testing

@testable import JobQ

/// The hand-written JSON and date text of events must equal what Foundation would write.
@Suite struct FormattingTests {
    /// Until 2200 the text equals Foundation's; beyond, Foundation's own rounding drifts by a
    /// millisecond, so there the text must read back to the same millisecond.
    @Test func isoDatesMatchFoundationsFormatStyle() throws {
        let style = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
        var generator = SystemRandomNumberGenerator()
        var dates = [0, 0.001, 0.999, 951_782_400, 4_107_542_399.999, 1_795_000_000.5].map(Date.init(timeIntervalSince1970:))
        for _ in 0..<5000 { dates.append(Date(timeIntervalSince1970: Double.random(in: 0..<7_258_118_400, using: &generator))) }
        for date in dates {
            #expect(ISO8601.string(date) == date.formatted(style), "\(date.timeIntervalSince1970)")
        }
        for seconds in [253_402_300_799.999, 200_000_000_000.123] {
            let text = ISO8601.string(Date(timeIntervalSince1970: seconds))
            let parsed = try #require(ISO8601.parse(text))
            #expect(abs(parsed.timeIntervalSince1970 - seconds) < 0.001, "\(text)")
        }
    }

    @Test func jsonStringsEscapeOnlyWhatTheyMust() throws {
        for text in ["plain", "", "quote \" and \\ backslash", "tab\tnew\nline\r", "\u{01}ctl", "ünïcødé 🎉"] {
            let literal = JSONText.string(text)
            let decoded = try JSONSerialization.jsonObject(with: Data(literal.utf8), options: [.fragmentsAllowed]) as? String
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
