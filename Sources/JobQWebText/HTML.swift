import Foundation

/// HTML text built by the pages. Everything that came from the store or the request goes
/// through ``escape(_:)`` (text and attribute values alike), so a job named
/// `<script>` shows as text.
package enum HTML {
    package static func escape(_ text: String) -> String {
        // Byte by byte: every character that needs escaping is ASCII, and a UTF-8 byte of a
        // longer character is never one of them.
        var out: [UInt8] = []
        out.reserveCapacity(text.utf8.count + 16)
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "&"): out += "&amp;".utf8
            case UInt8(ascii: "<"): out += "&lt;".utf8
            case UInt8(ascii: ">"): out += "&gt;".utf8
            case UInt8(ascii: "\""): out += "&quot;".utf8
            case UInt8(ascii: "'"): out += "&#39;".utf8
            default: out.append(byte)
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// A query string from name-value pairs (nil values left out), percent-encoded.
    package static func query(_ items: [(String, String?)]) -> String {
        let pairs = items.compactMap { name, value in value.map { "\(name)=\(percentEncoded($0))" } }
        return pairs.isEmpty ? "" : "?" + pairs.joined(separator: "&")
    }

    package static func percentEncoded(_ text: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? ""
    }

    /// A state as a coloured badge.
    package static func badge(_ state: String) -> String {
        "<span class=\"badge state-\(escape(state))\">\(escape(state))</span>"
    }

    package static func time(_ date: Date?) -> String {
        guard let date else { return "<span class=\"muted\">–</span>" }
        let text = timestamp.string(from: date)
        // A valid HTML date-time as it is (a space may stand for the T).
        return "<time datetime=\"\(escape(text))\" title=\"\(escape(relative(date)))\">\(escape(text))</time>"
    }

    private static let timestamp: DateFormatter = {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyy-MM-dd HH:mm:ss'Z'"
        return formatter
    }()

    /// "3m ago", "in 2h".
    package static func relative(_ date: Date, now: Date = Date()) -> String {
        let seconds = date.timeIntervalSince(now)
        let magnitude = abs(seconds)
        let text: String
        switch magnitude {
        case ..<1: return "now"
        case ..<60: text = "\(Int(magnitude))s"
        case ..<3600: text = "\(Int(magnitude / 60))m"
        case ..<86_400: text = "\(Int(magnitude / 3600))h"
        default: text = "\(Int(magnitude / 86_400))d"
        }
        return seconds < 0 ? "\(text) ago" : "in \(text)"
    }

    /// Bytes of pretty-printed JSON a page shows of one value; the rest is behind a link to the
    /// raw value. A page stays small whatever a job carries, and so does each live refresh.
    package static let jsonRenderLimit = 256 * 1024
    /// Levels of nesting that are indented; deeper levels stay at this indentation, so a deeply
    /// nested value cannot make the page grow with the square of its depth.
    package static let jsonIndentLimit = 32

    /// JSON text indented for reading, members in their stored order, in one pass over the
    /// input; at most `limit` bytes are written. `complete` is false when the text was cut.
    package static func prettyJSON(_ text: String, limit: Int = jsonRenderLimit) -> (text: String, complete: Bool) {
        let input = Array(text.utf8)
        var out: [UInt8] = []
        out.reserveCapacity(min(limit, input.count * 2) + 64)
        var depth = 0
        var inString = false
        var escaped = false
        func newline() {
            out.append(UInt8(ascii: "\n"))
            for _ in 0..<min(depth, jsonIndentLimit) { out += [32, 32] }
        }
        func isSpace(_ byte: UInt8) -> Bool { byte == 32 || byte == 10 || byte == 9 || byte == 13 }
        var index = 0
        while index < input.count {
            if out.count >= limit { return (String(decoding: out.prefix(limit), as: UTF8.self), false) }
            let byte = input[index]
            index += 1
            if inString {
                out.append(byte)
                if escaped {
                    escaped = false
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                } else if byte == UInt8(ascii: "\"") {
                    inString = false
                }
                continue
            }
            switch byte {
            case UInt8(ascii: "\""):
                inString = true
                out.append(byte)
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                // An empty object or array stays on one line: look past blanks for its end.
                var next = index
                while next < input.count, isSpace(input[next]) { next += 1 }
                let closer = byte == UInt8(ascii: "{") ? UInt8(ascii: "}") : UInt8(ascii: "]")
                if next < input.count, input[next] == closer {
                    out += [byte, closer]
                    index = next + 1
                    continue
                }
                out.append(byte)
                depth += 1
                newline()
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                depth = max(0, depth - 1)
                newline()
                out.append(byte)
            case UInt8(ascii: ","):
                out.append(byte)
                newline()
            case UInt8(ascii: ":"):
                out += [UInt8(ascii: ":"), 32]
            case 32, 10, 9, 13:
                continue
            default:
                out.append(byte)
            }
        }
        // The last bytes may have crossed the limit (a closing bracket adds a line and its
        // indentation): checked here too, not only before each byte.
        if out.count > limit { return (String(decoding: out.prefix(limit), as: UTF8.self), false) }
        return (String(decoding: out, as: UTF8.self), true)
    }

    /// A `<pre>` of JSON, or a dash. A value longer than ``jsonRenderLimit`` shows its start and
    /// a link to the whole value at `rawURL`.
    package static func json(_ text: String?, rawURL: String? = nil) -> String {
        guard let text, !text.isEmpty else { return "<span class=\"muted\">–</span>" }
        let (pretty, complete) = prettyJSON(text)
        var html = "<pre class=\"json\">\(escape(pretty))</pre>"
        if !complete {
            let whole = "the whole value (\(byteCount(text.utf8.count)))"
            html +=
                "<p class=\"muted\">Shown: the first \(byteCount(jsonRenderLimit)). "
                + (rawURL.map { "<a href=\"\(escape($0))\">Open \(whole)</a>.</p>" }
                    ?? "Read \(whole) with <code>jobq show</code>.</p>")
        }
        return html
    }

    /// Text cut to `limit` bytes, with a note when it was cut (a character cut in two shows as
    /// a replacement character).
    package static func capped(_ text: String, limit: Int) -> String {
        guard text.utf8.count > limit else { return text }
        return String(decoding: text.utf8.prefix(limit), as: UTF8.self) + " … (\(byteCount(text.utf8.count)) in all)"
    }

    package static func byteCount(_ count: Int) -> String {
        count >= 1024 * 1024
            ? String(format: "%.1f MiB", Double(count) / 1_048_576)
            : count >= 1024 ? "\(count / 1024) KiB" : "\(count) bytes"
    }
}
