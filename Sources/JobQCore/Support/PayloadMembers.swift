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
/// ```swift
/// try PayloadMembers.checked(#"{"caf\u00e9":1}"#, what: "payload")  // {"café":1}
/// try PayloadMembers.checked(#"{"c":1,"c":2}"#, what: "payload")    // throws .invalidInput
/// ```
package enum PayloadMembers {
    /// `text` (valid JSON) with its member names written plainly, after refusing what no store
    /// can read the same way.
    package static func checked(_ text: String, what: String) throws(JobQueueError) -> String {
        let bytes = Array(text.utf8)
        var output: [UInt8] = []
        var changed = false
        var frames: [Frame] = []
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "{"):
                frames.append(Frame(isObject: true, expectsName: true))
                index += 1
                output.append(byte)
            case UInt8(ascii: "["):
                frames.append(Frame(isObject: false, expectsName: false))
                index += 1
                output.append(byte)
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                frames.removeLast()
                index += 1
                output.append(byte)
            case UInt8(ascii: ","):
                if let last = frames.indices.last, frames[last].isObject { frames[last].expectsName = true }
                index += 1
                output.append(byte)
            case UInt8(ascii: "\""):
                let end = stringEnd(bytes, from: index)
                let raw = bytes[index..<end]
                if let last = frames.indices.last, frames[last].isObject, frames[last].expectsName {
                    frames[last].expectsName = false
                    let name =
                        raw.contains(UInt8(ascii: "\\"))
                        ? decoded(raw) : String(decoding: raw.dropFirst().dropLast(), as: UTF8.self)
                    guard frames[last].names.insert(name).inserted else {
                        let path = Self.path(frames.dropLast())
                        throw .invalidInput(
                            "\(what) has the member '\(JSONText.preview(name))' twice in the object at "
                                + "\(path.isEmpty ? "its top" : path): stores read such JSON "
                                + "differently (SQLite the first, PostgreSQL the last); send each name once")
                    }
                    frames[last].lastName = name
                    if raw.contains(UInt8(ascii: "\\")), !name.unicodeScalars.contains(where: needsEscape) {
                        output.append(UInt8(ascii: "\""))
                        output += name.utf8
                        output.append(UInt8(ascii: "\""))
                        changed = true
                    } else {
                        output += raw
                    }
                } else {
                    output += raw
                }
                index = end
            case UInt8(ascii: "-"), 48...57:
                var end = index
                while end < bytes.count, isNumberByte(bytes[end]) { end += 1 }
                let number = bytes[index..<end]
                guard let value = JSONNumber(number), value.isWithinLimits else {
                    throw .invalidInput(
                        "\(what) holds the number \(JSONText.preview(String(decoding: number, as: UTF8.self))), beyond "
                            + "what jobq compares exactly (1e-\(JSONNumber.exponentLimit) to 1e\(JSONNumber.exponentLimit) in "
                            + "magnitude); send it as a string")
                }
                output += number
                index = end
            default:
                output.append(byte)
                index += 1
            }
        }
        return changed ? String(decoding: output, as: UTF8.self) : text
    }

    /// An object or array being read. Kept small: a deeply nested payload has one per level.
    private struct Frame {
        let isObject: Bool
        var expectsName: Bool
        var names: Set<String> = []
        /// The name of the member being read, for messages.
        var lastName: String?

        init(isObject: Bool, expectsName: Bool) {
            self.isObject = isObject
            self.expectsName = expectsName
        }
    }

    /// The pointer of the value being read inside `frames`, for a message (an array's element
    /// shows as `/-`): made only when one is needed.
    private static func path(_ frames: some Sequence<Frame>) -> String {
        frames.map { "/" + ($0.isObject ? ($0.lastName ?? "") : "-") }.joined()
    }

    /// The index just after the string literal starting at `start`.
    private static func stringEnd(_ bytes: [UInt8], from start: Int) -> Int {
        var index = start + 1
        while index < bytes.count {
            switch bytes[index] {
            case UInt8(ascii: "\\"): index += 2
            case UInt8(ascii: "\""): return index + 1
            default: index += 1
            }
        }
        return bytes.count
    }

    /// A string literal's value (its escapes read).
    private static func decoded(_ literal: ArraySlice<UInt8>) -> String {
        (try? JSONDecoder().decode(String.self, from: Data(literal))) ?? String(decoding: literal, as: UTF8.self)
    }

    private static func needsEscape(_ scalar: Unicode.Scalar) -> Bool {
        scalar == "\"" || scalar == "\\" || scalar.value < 0x20
    }

    private static func isNumberByte(_ byte: UInt8) -> Bool {
        (48...57).contains(byte) || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "+") || byte == UInt8(ascii: ".")
            || byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E")
    }
}
