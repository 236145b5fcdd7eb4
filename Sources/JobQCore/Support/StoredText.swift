/// What every store can hold, so that a value behaves the same on SQLite and PostgreSQL.
///
/// PostgreSQL's text cannot hold NUL (U+0000): a write that carries one fails for good
/// (SQLSTATE 22021), and its `json` type accepts an escaped NUL (`\u0000`) or a lone surrogate
/// (`\ud800`) but fails every read that extracts it as text (22P05), such as a partitioned
/// claim's. So jobq keeps both out of every store:
///
/// - free text jobq records on a job's behalf (an error, a progress message, a command's
///   output) has each NUL replaced by U+FFFD, as undecodable bytes already are;
/// - JSON a user hands over (a payload, a result, an update, a checkpoint, a context value)
///   that holds an escaped NUL or a lone surrogate is refused where it enters, with an error
///   that says where, since changing it would change the user's data.
///
/// ```swift
/// StoredText.plain("x\u{0}y")                              // "x\u{FFFD}y"
/// try StoredText.checkJSON(#"{"a":"\u0000"}"#, what: "payload")  // throws .invalidInput
/// ```
package enum StoredText {
    /// `text` with each NUL replaced by U+FFFD (the replacement character).
    package static func plain(_ text: String) -> String {
        guard text.utf8.contains(0) else { return text }
        return String(text.unicodeScalars.map { $0.value == 0 ? "\u{FFFD}" : Character($0) })
    }

    /// Throws when the JSON text `json` holds an escaped NUL or a lone surrogate, or a raw NUL.
    package static func checkJSON(_ json: String, what: @autoclosure () -> String) throws(JobQueueError) {
        if let problem = problem(inJSON: json) {
            throw .invalidInput(
                "\(what()) holds \(problem), which jobq does not store (PostgreSQL cannot read it back); "
                    + "remove it or encode the bytes (as base64, say)")
        }
    }

    /// The deepest nesting of arrays and objects kept: Foundation's parser stops at 512, and
    /// SQLite's JSON functions at 1000, so deeper JSON written by an encoder would be stored on
    /// one store and refused by the other.
    package static let maximumDepth = 512

    /// What in `json` a store cannot hold, if anything: "an escaped NUL (\u0000) at byte N",
    /// "a lone surrogate (\ud800) at byte N", a NUL byte, or nesting deeper than
    /// ``maximumDepth``.
    package static func problem(inJSON json: String) -> String? {
        // Most JSON has no escapes and little nesting: one pass over the bytes finds out.
        var openers = 0
        var needsReading = false
        for byte in json.utf8 {
            if byte == backslash || byte == 0 {
                needsReading = true
                break
            }
            if byte == UInt8(ascii: "[") || byte == UInt8(ascii: "{") {
                openers += 1
                if openers > maximumDepth {
                    needsReading = true
                    break
                }
            }
        }
        guard needsReading else { return nil }
        let bytes = Array(json.utf8)
        var index = 0
        var depth = 0
        var inString = false
        var pendingHigh: Int?  // the offset of a high surrogate escape waiting for its low half
        func loneSurrogate(at offset: Int) -> String {
            "a lone surrogate (\\u\(String(decoding: bytes[(offset + 2)..<(offset + 6)], as: UTF8.self))) at byte \(offset)"
        }
        while index < bytes.count {
            let byte = bytes[index]
            if byte == 0 { return "a NUL byte at byte \(index)" }
            guard inString else {
                switch byte {
                case UInt8(ascii: "\""): inString = true
                case UInt8(ascii: "["), UInt8(ascii: "{"):
                    depth += 1
                    if depth > maximumDepth { return "nesting deeper than \(maximumDepth) levels at byte \(index)" }
                case UInt8(ascii: "]"), UInt8(ascii: "}"): depth -= 1
                default: break
                }
                index += 1
                continue
            }
            guard byte == backslash, index + 1 < bytes.count else {
                if let high = pendingHigh { return loneSurrogate(at: high) }
                if byte == UInt8(ascii: "\"") { inString = false }
                index += 1
                continue
            }
            guard bytes[index + 1] == UInt8(ascii: "u"), index + 5 < bytes.count,
                let unit = UInt16(String(decoding: bytes[(index + 2)..<(index + 6)], as: UTF8.self), radix: 16)
            else {
                if let high = pendingHigh { return loneSurrogate(at: high) }
                index += 2  // any other escape, `\\` and `\"` among them, is two bytes
                continue
            }
            switch unit {
            case 0:
                return "an escaped NUL (\\u0000) at byte \(index)"
            case 0xD800...0xDBFF:
                if let high = pendingHigh { return loneSurrogate(at: high) }
                pendingHigh = index
            case 0xDC00...0xDFFF:
                guard pendingHigh != nil else { return loneSurrogate(at: index) }
                pendingHigh = nil
            default:
                if let high = pendingHigh { return loneSurrogate(at: high) }
            }
            index += 6
        }
        return pendingHigh.map(loneSurrogate(at:))
    }

    private static let backslash = UInt8(ascii: "\\")
}
