import Foundation

/// What a payload's members must be for a filter (`/customer = "acme"`), a queue's partition and
/// a payload index to read the same member on every store. Checked, and where needed written
/// plainly, as a job enters, on text that is already valid JSON:
///
/// - **Duplicate names** in one object are refused: SQLite reads the first, PostgreSQL the last.
/// - **Escaped names** are stored unescaped (`{"caf\u00e9":1}` as `{"café":1}`, the same JSON
///   value): SQLite matches a name by its text as written, PostgreSQL by its value. A name that
///   needs its escapes (a quote, a backslash, a control character) keeps them; no pointer can
///   name such a member.
/// - **Numbers** lie within 1e-10000 to 1e10000 in magnitude (``JSONNumber/exponentLimit``), as
///   both stores compare them exactly (PostgreSQL's `numeric` holds no more).
///
/// One pass over the bytes, allocating only for objects of many members and for names that
/// carry escapes: every job enqueued from text pays it.
///
/// ```swift
/// try PayloadMembers.checked(#"{"caf\u00e9":1}"#, what: "payload")  // {"café":1}
/// try PayloadMembers.checked(#"{"c":1,"c":2}"#, what: "payload")    // throws .invalidInput
/// ```
package enum PayloadMembers {
    /// `text` (valid JSON) with its member names written plainly, after refusing what no store
    /// can read the same way.
    package static func checked(_ text: String, what: @autoclosure () -> String) throws(JobQueueError) -> String {
        var text = text
        // withUTF8 rethrows untyped: the scan's result comes out as a Result.
        let scanned = text.withUTF8 { bytes in Result { () throws(JobQueueError) in try scan(bytes, what: what) } }
        let rewrites = try scanned.get()
        guard !rewrites.isEmpty else { return text }
        // Names to write plainly, in order: the bytes between them as they were.
        var output: [UInt8] = []
        text.withUTF8 { bytes in
            output.reserveCapacity(bytes.count)
            var from = 0
            for rewrite in rewrites {
                output += bytes[from..<rewrite.range.lowerBound]
                output.append(UInt8(ascii: "\""))
                output += rewrite.name.utf8
                output.append(UInt8(ascii: "\""))
                from = rewrite.range.upperBound
            }
            output += bytes[from...]
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// A member name written with escapes it does not need: where its literal stands, and its value.
    private struct Rewrite {
        let range: Range<Int>
        let name: String
    }

    /// An object or array being read. Kept small: a deeply nested payload has one per level.
    private struct Frame {
        let isObject: Bool
        var expectsName: Bool
        /// The names read so far (their literals' ranges while they have no escapes, the first
        /// few; a set once there are many).
        var literals: [Range<Int>] = []
        var names: Set<String>? = nil
        /// The name of the member being read, for messages.
        var lastName: Range<Int>?

        init(isObject: Bool, expectsName: Bool) {
            self.isObject = isObject
            self.expectsName = expectsName
        }
    }

    private static func scan(_ bytes: UnsafeBufferPointer<UInt8>, what: () -> String) throws(JobQueueError) -> [Rewrite]
    {
        var rewrites: [Rewrite] = []
        var frames: [Frame] = []
        var index = 0
        while index < bytes.count {
            switch bytes[index] {
            case UInt8(ascii: "{"):
                frames.append(Frame(isObject: true, expectsName: true))
                index += 1
            case UInt8(ascii: "["):
                frames.append(Frame(isObject: false, expectsName: false))
                index += 1
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                // Valid JSON closes only what it opened; nothing here trusts that to stay so.
                if !frames.isEmpty { frames.removeLast() }
                index += 1
            case UInt8(ascii: ","):
                if let last = frames.indices.last, frames[last].isObject { frames[last].expectsName = true }
                index += 1
            case UInt8(ascii: "\""):
                var end = index + 1
                var escaped = false
                while end < bytes.count, bytes[end] != UInt8(ascii: "\"") {
                    if bytes[end] == UInt8(ascii: "\\") {
                        escaped = true
                        end += 1
                    }
                    end += 1
                }
                end = min(end + 1, bytes.count)
                if let last = frames.indices.last, frames[last].isObject, frames[last].expectsName {
                    frames[last].expectsName = false
                    frames[last].lastName = index..<end
                    let literal = index..<end
                    var name: String? = nil
                    if escaped {
                        let decoded = decodedString(bytes, literal)
                        name = decoded
                        if !decoded.unicodeScalars.contains(where: needsEscape) {
                            rewrites.append(Rewrite(range: literal, name: decoded))
                        }
                    }
                    guard remember(&frames[last], literal, name, bytes) else {
                        let path = Self.path(frames.dropLast(), bytes)
                        throw .invalidInput(
                            "\(what()) has the member '\(JSONText.preview(name ?? decodedString(bytes, literal)))' twice "
                                + "in the object at \(path.isEmpty ? "its top" : path): stores read such JSON "
                                + "differently (SQLite the first, PostgreSQL the last); send each name once")
                    }
                }
                index = end
            case UInt8(ascii: "-"), 48...57:
                var end = index
                var plain = true
                while end < bytes.count, isNumberByte(bytes[end]) {
                    if bytes[end] == UInt8(ascii: "e") || bytes[end] == UInt8(ascii: "E") { plain = false }
                    end += 1
                }
                // Up to 15 characters without an exponent lie well within the limits.
                if !plain || end - index > 15 {
                    let number = UnsafeBufferPointer(rebasing: bytes[index..<end])
                    guard let value = JSONNumber(number), value.isWithinLimits else {
                        throw .invalidInput(
                            "\(what()) holds the number \(JSONText.preview(String(decoding: number, as: UTF8.self))), "
                                + "beyond what jobq compares exactly (1e-\(JSONNumber.exponentLimit) to "
                                + "1e\(JSONNumber.exponentLimit) in magnitude); send it as a string")
                    }
                }
                index = end
            default:
                index += 1
            }
        }
        return rewrites
    }

    /// Adds a name to its object's; false when the object has it already.
    private static func remember(
        _ frame: inout Frame, _ literal: Range<Int>, _ decoded: String?, _ bytes: UnsafeBufferPointer<UInt8>
    ) -> Bool {
        if frame.names == nil, decoded == nil, frame.literals.count < 16 {
            let new = bytes[literal]
            if frame.literals.contains(where: { bytes[$0].elementsEqual(new) }) { return false }
            frame.literals.append(literal)
            return true
        }
        // Many names, or one with escapes: by value from now on.
        if frame.names == nil {
            frame.names = Set(frame.literals.map { decodedString(bytes, $0) })
            frame.literals = []
        }
        return frame.names!.insert(decoded ?? decodedString(bytes, literal)).inserted
    }

    /// The pointer of the value being read inside `frames`, for a message (an array's element
    /// shows as `/-`).
    private static func path(_ frames: some Sequence<Frame>, _ bytes: UnsafeBufferPointer<UInt8>) -> String {
        frames.map { "/" + ($0.isObject ? ($0.lastName.map { decodedString(bytes, $0) } ?? "") : "-") }.joined()
    }

    /// A string literal's value (its escapes read).
    private static func decodedString(_ bytes: UnsafeBufferPointer<UInt8>, _ literal: Range<Int>) -> String {
        let slice = bytes[literal]
        guard slice.contains(UInt8(ascii: "\\")) else {
            return String(decoding: slice.dropFirst().dropLast(), as: UTF8.self)
        }
        return (try? JSONDecoder().decode(String.self, from: Data(slice)))
            ?? String(decoding: slice.dropFirst().dropLast(), as: UTF8.self)
    }

    private static func needsEscape(_ scalar: Unicode.Scalar) -> Bool {
        scalar == "\"" || scalar == "\\" || scalar.value < 0x20
    }

    private static func isNumberByte(_ byte: UInt8) -> Bool {
        (48...57).contains(byte) || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "+") || byte == UInt8(ascii: ".")
            || byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E")
    }
}
