import Foundation

/// A JSON document parsed for jobq's own edits (a key set in a payload, an element appended, a
/// tree node's `each` and `with`), with object members in their order and numbers and strings
/// as written: written back, it is the minified text SQLite's JSON functions produce, so that
/// every store stores the same text.
///
/// ```swift
/// var payload = try OrderedJSON.parse(#"{"a": 1}"#)
/// payload.set("batch", to: try OrderedJSON.parse(#"{"total":2}"#))
/// payload.text  // {"a":1,"batch":{"total":2}}
/// ```
package indirect enum OrderedJSON: Equatable, Sendable {
    case null
    case bool(Bool)
    /// The number's text as written.
    case number(String)
    /// The string's text as written, quotes and escapes included, and its value.
    case string(raw: String, value: String)
    case array([OrderedJSON])
    case object([Member])

    package struct Member: Equatable, Sendable {
        /// The key's text as written, quotes included, and its value.
        package var rawKey: String
        package var key: String
        package var value: OrderedJSON

        package init(rawKey: String, key: String, value: OrderedJSON) {
            self.rawKey = rawKey
            self.key = key
            self.value = value
        }
    }

    package struct ParseError: Error, CustomStringConvertible {
        package let description: String
    }

    package static func parse(_ text: String) throws -> OrderedJSON {
        var parser = Parser(bytes: Array(text.utf8))
        let value = try parser.value()
        parser.skipSpace()
        guard parser.index == parser.bytes.count else { throw ParseError(description: "text after the JSON value") }
        return value
    }

    /// `object` (JSON text) with `key` set to `value` (JSON text), minified: SQLite's
    /// `json_set(object, '$.key', json(value))`. A text that is not an object comes back
    /// minified and otherwise as it was.
    package static func setting(_ key: String, to value: String, in object: String) throws -> String {
        var document = try parse(object)
        document.set(key, to: try parse(value))
        return document.text
    }

    /// `array` (JSON text, or nil for none) with `element` (JSON text) appended, minified.
    package static func appending(_ element: String, to array: String?) throws -> String {
        guard case .array(let elements) = try parse(array ?? "[]") else { return try parse(array ?? "[]").text }
        return OrderedJSON.array(elements + [try parse(element)]).text
    }

    package static func string(_ value: String) -> OrderedJSON { .string(raw: JSONText.string(value), value: value) }

    /// The minified text.
    package var text: String {
        var output = ""
        write(to: &output)
        return output
    }

    private func write(to output: inout String) {
        switch self {
        case .null: output += "null"
        case .bool(let value): output += value ? "true" : "false"
        case .number(let text): output += text
        case .string(let raw, _): output += raw
        case .array(let elements):
            output += "["
            for (index, element) in elements.enumerated() {
                if index > 0 { output += "," }
                element.write(to: &output)
            }
            output += "]"
        case .object(let members):
            output += "{"
            for (index, member) in members.enumerated() {
                if index > 0 { output += "," }
                output += member.rawKey
                output += ":"
                member.value.write(to: &output)
            }
            output += "}"
        }
    }

    /// SQLite's name of the value's type (`json_type`): null, true, false, integer, real, text,
    /// array or object.
    package var typeName: String {
        switch self {
        case .null: "null"
        case .bool(let value): value ? "true" : "false"
        case .number(let text): text.contains(where: { $0 == "." || $0 == "e" || $0 == "E" }) ? "real" : "integer"
        case .string: "text"
        case .array: "array"
        case .object: "object"
        }
    }

    /// Sets an object's member, in place when it exists, else last (as `json_set`). Does
    /// nothing to a value that is not an object.
    package mutating func set(_ key: String, to value: OrderedJSON) {
        guard case .object(var members) = self else { return }
        if let index = members.firstIndex(where: { $0.key == key }) {
            members[index].value = value
        } else {
            members.append(Member(rawKey: JSONText.string(key), key: key, value: value))
        }
        self = .object(members)
    }

    /// The value a JSON Pointer's tokens lead to, or nil.
    package func value(at tokens: [String]) -> OrderedJSON? {
        var current = self
        for token in tokens {
            switch current {
            case .object(let members):
                guard let member = members.last(where: { $0.key == token }) else { return nil }
                current = member.value
            case .array(let elements):
                guard JSONPointer.isIndex(token), let index = Int(token), index < elements.count else { return nil }
                current = elements[index]
            default:
                return nil
            }
        }
        return current
    }

    /// RFC 7396 merge patch (`json_patch`): members of `patch` replace or add to this object's,
    /// null removes one, objects merge recursively; a patch that is not an object replaces all.
    package func patched(with patch: OrderedJSON) -> OrderedJSON {
        guard case .object(let changes) = patch else { return patch }
        guard case .object(var members) = self else {
            return OrderedJSON.object([]).patched(with: patch)
        }
        for change in changes {
            let index = members.firstIndex { $0.key == change.key }
            if change.value == .null {
                if let index { members.remove(at: index) }
            } else if let index {
                members[index].value = members[index].value.patched(with: change.value)
            } else {
                members.append(
                    Member(rawKey: change.rawKey, key: change.key, value: OrderedJSON.null.patched(with: change.value)))
            }
        }
        return .object(members)
    }
}

extension OrderedJSON {
    /// The parser: RFC 8259 JSON, which jobq has checked before it stores any.
    fileprivate struct Parser {
        let bytes: [UInt8]
        var index = 0

        mutating func skipSpace() {
            while index < bytes.count, [0x20, 0x0A, 0x0D, 0x09].contains(bytes[index]) { index += 1 }
        }

        private func fail(_ what: String) -> ParseError { ParseError(description: "\(what) at byte \(index)") }

        mutating func value() throws -> OrderedJSON {
            skipSpace()
            guard index < bytes.count else { throw fail("a value expected") }
            switch bytes[index] {
            case UInt8(ascii: "{"): return try object()
            case UInt8(ascii: "["): return try array()
            case UInt8(ascii: "\""):
                let (raw, value) = try string()
                return .string(raw: raw, value: value)
            case UInt8(ascii: "t"):
                try literal("true")
                return .bool(true)
            case UInt8(ascii: "f"):
                try literal("false")
                return .bool(false)
            case UInt8(ascii: "n"):
                try literal("null")
                return .null
            default: return try number()
            }
        }

        private mutating func literal(_ word: String) throws {
            let expected = Array(word.utf8)
            guard index + expected.count <= bytes.count, Array(bytes[index..<index + expected.count]) == expected else {
                throw fail("'\(word)' expected")
            }
            index += expected.count
        }

        private mutating func number() throws -> OrderedJSON {
            let start = index
            while index < bytes.count, "+-0123456789.eE".utf8.contains(bytes[index]) { index += 1 }
            guard index > start else { throw fail("a value expected") }
            return .number(String(decoding: bytes[start..<index], as: UTF8.self))
        }

        private mutating func string() throws -> (raw: String, value: String) {
            let start = index
            index += 1
            var escaped = false
            var hasEscapes = false
            while index < bytes.count {
                let byte = bytes[index]
                index += 1
                if escaped {
                    escaped = false
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                    hasEscapes = true
                } else if byte == UInt8(ascii: "\"") {
                    let raw = String(decoding: bytes[start..<index], as: UTF8.self)
                    // Most strings have no escapes: their value is their text.
                    guard hasEscapes else {
                        return (raw, String(decoding: bytes[(start + 1)..<(index - 1)], as: UTF8.self))
                    }
                    let value =
                        (try? JSONDecoder().decode(String.self, from: Data(raw.utf8)))
                        ?? String(raw.dropFirst().dropLast())
                    return (raw, value)
                }
            }
            throw fail("an unterminated string")
        }

        private mutating func array() throws -> OrderedJSON {
            index += 1
            var elements: [OrderedJSON] = []
            skipSpace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
                index += 1
                return .array(elements)
            }
            while true {
                elements.append(try value())
                skipSpace()
                guard index < bytes.count else { throw fail("']' expected") }
                let byte = bytes[index]
                index += 1
                if byte == UInt8(ascii: "]") { return .array(elements) }
                guard byte == UInt8(ascii: ",") else { throw fail("',' or ']' expected") }
            }
        }

        private mutating func object() throws -> OrderedJSON {
            index += 1
            var members: [Member] = []
            skipSpace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
                index += 1
                return .object(members)
            }
            while true {
                skipSpace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw fail("a key expected") }
                let (raw, key) = try string()
                skipSpace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw fail("':' expected") }
                index += 1
                members.append(Member(rawKey: raw, key: key, value: try value()))
                skipSpace()
                guard index < bytes.count else { throw fail("'}' expected") }
                let byte = bytes[index]
                index += 1
                if byte == UInt8(ascii: "}") { return .object(members) }
                guard byte == UInt8(ascii: ",") else { throw fail("',' or '}' expected") }
            }
        }
    }
}
