import Foundation

/// Small helpers for writing JSON text by hand where the field order matters to readers.
package enum JSONText {
    /// A JSON string literal, escaped per RFC 8259.
    package static func string(_ value: String) -> String {
        // Most strings (names, queues, ISO dates) need no escaping: copy them whole.
        if !value.utf8.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) {
            return "\"" + value + "\""
        }
        var out = "\""
        out.reserveCapacity(value.utf8.count + 2)
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20:
                out += String(format: "\\u%04x", scalar.value)
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }

    /// A JSON number; whole numbers print without a fraction.
    static func number(_ value: Double) -> String {
        if value.isFinite, value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return String(value)
    }

    /// Checks that `text` is one JSON value that every store can hold (``StoredText``); the
    /// error says where parsing stopped. The store
    /// minifies the text with SQLite's `json()` when it inserts it, keeping the key order.
    ///
    /// Plain JSON (``PlainJSON``) is told valid in one pass; anything else is parsed by Foundation,
    /// which decides. `what` is built only for an error.
    package static func validate(_ text: String, what: @autoclosure () -> String) throws(JobQueueError) {
        if !PlainJSON.isValid(text) {
            do {
                _ = try JSONSerialization.jsonObject(with: Data(text.utf8), options: [.fragmentsAllowed])
            } catch {
                throw .invalidInput("\(what()) is not valid JSON: \(describe(error)); got: \(preview(text))")
            }
        }
        try StoredText.checkJSON(text, what: what())
    }

    /// Valid JSON without the whitespace between tokens, keys in their order: what SQLite's
    /// `json()` stores, for a store whose SQL has no such function.
    package static func minified(_ text: String) -> String {
        // One pass; a copy is made only at the first whitespace between tokens, so that a payload
        // from an encoder (most of them, with none) is kept as it is.
        var output: [UInt8]?
        var scanner = StringLiteralScanner()
        for (offset, byte) in text.utf8.enumerated() {
            let between = !scanner.isInString(byte)
            let whitespace =
                byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\n") || byte == UInt8(ascii: "\r")
                || byte == UInt8(ascii: "\t")
            if between, whitespace {
                if output == nil {
                    output = Array(text.utf8.prefix(offset))
                    output?.reserveCapacity(text.utf8.count)
                }
            } else {
                output?.append(byte)
            }
        }
        return output.map { String(decoding: $0, as: UTF8.self) } ?? text
    }

    package static func preview(_ text: String) -> String {
        text.count > 80 ? String(text.prefix(77)) + "..." : text
    }

    static func describe(_ error: Error) -> String {
        let ns = error as NSError
        if let debug = ns.userInfo["NSDebugDescription"] as? String { return debug }
        return ns.localizedDescription
    }
}

/// ISO 8601 with milliseconds, UTC, as used in every JSON output.
package enum ISO8601 {
    /// `2026-11-21T17:00:00.250Z`: what `Date.ISO8601FormatStyle(includingFractionalSeconds: true)`
    /// prints, computed directly, because events carry dates and the format style costs
    /// microseconds per call on the hot path.
    package static func string(_ date: Date) -> String {
        let totalMilliseconds = Int64((date.timeIntervalSince1970 * 1000).rounded(.down))
        guard (0...253_402_300_799_999).contains(totalMilliseconds) else {
            // Before 1970 or after 9999: rare enough for the general formatter.
            return date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
        }
        let milliseconds = Int(totalMilliseconds % 1000)
        let seconds = totalMilliseconds / 1000
        let days = Int(seconds / 86_400)
        let secondOfDay = Int(seconds % 86_400)
        let (year, month, day) = civilDate(daysSinceEpoch: days)
        // Written as bytes into the string's own storage: appending scalar by scalar was most
        // of the cost of an `enqueued` event's data.
        return String(unsafeUninitializedCapacity: 24) { bytes in
            var end = 0
            func digits(_ value: Int, _ count: Int) {
                var value = value
                for place in stride(from: end + count - 1, through: end, by: -1) {
                    bytes[place] = UInt8(48 + value % 10)
                    value /= 10
                }
                end += count
            }
            func byte(_ character: UInt8) {
                bytes[end] = character
                end += 1
            }
            digits(year, 4)
            byte(UInt8(ascii: "-"))
            digits(month, 2)
            byte(UInt8(ascii: "-"))
            digits(day, 2)
            byte(UInt8(ascii: "T"))
            digits(secondOfDay / 3600, 2)
            byte(UInt8(ascii: ":"))
            digits(secondOfDay / 60 % 60, 2)
            byte(UInt8(ascii: ":"))
            digits(secondOfDay % 60, 2)
            byte(UInt8(ascii: "."))
            digits(milliseconds, 3)
            byte(UInt8(ascii: "Z"))
            return end
        }
    }

    /// Year, month, day of a day count since 1970-01-01 (proleptic Gregorian; Howard Hinnant's
    /// days-to-civil algorithm).
    /// Year, month and day of a day number (days since 1970-01-01), proleptic Gregorian
    /// (H. Hinnant's algorithm; for days from 0000-03-01 on).
    static func civilDate(daysSinceEpoch: Int) -> (year: Int, month: Int, day: Int) {
        let z = daysSinceEpoch + 719_468
        let era = z / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    /// Parses `2026-11-21T17:00:00Z`, with or without fractional seconds or a UTC offset.
    static func parse(_ text: String) -> Date? {
        if let date = try? Date(text, strategy: .iso8601) { return date }
        if let date = try? Date(text, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true)) {
            return date
        }
        return nil
    }
}

extension Duration {
    /// A duration stored as seconds (REAL), to the millisecond. A value no entry accepts (over
    /// 100 years, not finite: written by hand or by an older jobq) is read as 100 years rather
    /// than trapping every reader.
    package init(storedSeconds seconds: Double) {
        let bound = DurationParser.maximumSeconds
        let clamped = seconds.isNaN ? bound : min(max(seconds, -bound), bound)
        self = .milliseconds(Int64((clamped * 1000).rounded()))
    }

    /// The duration in seconds, as a Double.
    ///
    /// ```swift
    /// Duration.milliseconds(1500).inSeconds  // 1.5
    /// ```
    public var inSeconds: Double {
        let (s, atto) = components
        return Double(s) + Double(atto) / 1e18
    }
}

extension JSONText {
    /// Tells, byte by byte through raw JSON text, whether each byte stands inside a string
    /// literal (its quotes included): the one place that knows JSON's escapes, for the passes
    /// over raw text that must not look into strings.
    ///
    /// ```swift
    /// var scanner = JSONText.StringLiteralScanner()
    /// let brackets = text.utf8.filter { !scanner.isInString($0) && $0 == UInt8(ascii: "[") }.count
    /// ```
    package struct StringLiteralScanner {
        private var inString = false
        private var escaped = false

        package init() {}

        /// Whether `byte`, the next byte of the text, is part of a string literal.
        package mutating func isInString(_ byte: UInt8) -> Bool {
            if inString {
                if escaped {
                    escaped = false
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                } else if byte == UInt8(ascii: "\"") {
                    inString = false
                }
                return true
            }
            if byte == UInt8(ascii: "\"") { inString = true }
            return inString
        }
    }

    /// The depth past `limit` to which `text` nests arrays and objects, or nil when it stays
    /// within it: checked before a recursive parser meets a body of a million `[`.
    package static func nestingDepth(of text: String, exceeding limit: Int) -> Int? {
        var depth = 0
        var scanner = StringLiteralScanner()
        for byte in text.utf8 where !scanner.isInString(byte) {
            switch byte {
            case UInt8(ascii: "["), UInt8(ascii: "{"):
                depth += 1
                if depth > limit { return depth }
            case UInt8(ascii: "]"), UInt8(ascii: "}"): depth -= 1
            default: break
            }
        }
        return nil
    }
}
