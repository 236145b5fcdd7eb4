import Foundation
import JobQ

/// HTML text built by the pages. Everything that came from the store or the request goes
/// through ``escape(_:)`` (text and attribute values alike), so a job named
/// `<script>` shows as text.
enum HTML {
    static func escape(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for character in text.unicodeScalars {
            switch character {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default: out.unicodeScalars.append(character)
            }
        }
        return out
    }

    /// A query string from name-value pairs (nil values left out), percent-encoded.
    static func query(_ items: [(String, String?)]) -> String {
        let pairs = items.compactMap { name, value in value.map { "\(name)=\(percentEncoded($0))" } }
        return pairs.isEmpty ? "" : "?" + pairs.joined(separator: "&")
    }

    static func percentEncoded(_ text: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? ""
    }

    /// A state as a coloured badge.
    static func badge(_ state: String) -> String {
        "<span class=\"badge state-\(escape(state))\">\(escape(state))</span>"
    }

    static func time(_ date: Date?) -> String {
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
    static func relative(_ date: Date, now: Date = Date()) -> String {
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

    /// JSON text indented for reading, members in their stored order.
    static func prettyJSON(_ text: String) -> String {
        var out = ""
        var depth = 0
        var inString = false
        var escaped = false
        var previous: Character = " "
        func newline() { out += "\n" + String(repeating: "  ", count: depth) }
        for character in text {
            if inString {
                out.append(character)
                if escaped { escaped = false } else if character == "\\" { escaped = true } else if character == "\"" { inString = false }
                continue
            }
            switch character {
            case "\"":
                inString = true
                out.append(character)
            case "{", "[":
                out.append(character)
                depth += 1
                newline()
            case "}", "]":
                depth = max(0, depth - 1)
                if previous == "{" || previous == "[" {
                    // An empty object or array stays on one line.
                    out = String(out.reversed().drop { $0 == " " || $0 == "\n" }.reversed())
                } else {
                    newline()
                }
                out.append(character)
            case ",":
                out.append(character)
                newline()
            case ":":
                out += ": "
            case " ", "\n", "\t", "\r":
                continue
            default:
                out.append(character)
            }
            previous = character
        }
        return out
    }

    /// A `<pre>` of JSON, or a dash.
    static func json(_ text: String?) -> String {
        guard let text, !text.isEmpty else { return "<span class=\"muted\">–</span>" }
        return "<pre class=\"json\">\(escape(prettyJSON(text)))</pre>"
    }
}
