import Foundation

/// Small helpers for writing JSON text by hand where the field order matters to readers.
enum JSONText {
    /// A JSON string literal, escaped per RFC 8259.
    static func string(_ value: String) -> String {
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

    /// Checks that `text` is one JSON value; the error says where parsing stopped. The store
    /// minifies the text with SQLite's `json()` when it inserts it, keeping the key order.
    static func validate(_ text: String, what: String) throws(JobQueueError) {
        do {
            _ = try JSONSerialization.jsonObject(with: Data(text.utf8), options: [.fragmentsAllowed])
        } catch {
            throw .invalidInput("\(what) is not valid JSON: \(describe(error)); got: \(preview(text))")
        }
    }

    static func preview(_ text: String) -> String {
        text.count > 80 ? String(text.prefix(77)) + "..." : text
    }

    static func describe(_ error: Error) -> String {
        let ns = error as NSError
        if let debug = ns.userInfo["NSDebugDescription"] as? String { return debug }
        return ns.localizedDescription
    }
}

/// ISO 8601 with milliseconds, UTC, as used in every JSON output.
enum ISO8601 {
    static func string(_ date: Date) -> String {
        date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
    }

    /// Parses `2026-11-21T17:00:00Z`, with or without fractional seconds or a UTC offset.
    static func parse(_ text: String) -> Date? {
        if let date = try? Date(text, strategy: .iso8601) { return date }
        if let date = try? Date(text, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true)) { return date }
        return nil
    }
}

extension Duration {
    /// The duration in seconds, as a Double.
    ///
    /// ```swift
    /// Duration.milliseconds(1500).inSeconds  // 1.5
    /// ```
    /// A duration stored as seconds (REAL), to the millisecond.
    init(storedSeconds seconds: Double) {
        self = .milliseconds(Int64((seconds * 1000).rounded()))
    }

    public var inSeconds: Double {
        let (s, atto) = components
        return Double(s) + Double(atto) / 1e18
    }
}
