/// Tells, in one pass over the bytes and without building anything, that a text is JSON of the
/// plain kind nearly every payload is: RFC 8259 syntax, numbers of at most 15 digits without an
/// exponent, escapes other than surrogates, nesting well under ``StoredText/maximumDepth``.
///
/// Why: validating a payload with Foundation's `JSONSerialization` builds an object for every
/// value, and it was four fifths of the producer's CPU in a bulk enqueue (about 1.8 us a job,
/// `Performance.md`). A text this check accepts, Foundation's parser accepts too; anything else
/// (an exponent, a long number, a surrogate escape, deep nesting, an error) goes to Foundation,
/// which decides and says what is wrong, so the texts jobq accepts are what they were.
///
/// ```swift
/// PlainJSON.isValid(#"{"a": [1, 2.5, "x\n"], "b": null}"#)  // true
/// PlainJSON.isValid(#"{"a": 1e400}"#)  // false: Foundation decides
/// ```
package enum PlainJSON {
    package static func isValid(_ text: String) -> Bool {
        var text = text
        return text.withUTF8 { bytes in
            var reader = Reader(bytes: bytes)
            guard reader.value(depth: 0) else { return false }
            reader.skipSpace()
            return reader.index == bytes.count
        }
    }

    /// Nesting deeper than this is left to Foundation (which stops at 512).
    private static let maximumDepth = 256

    private struct Reader {
        let bytes: UnsafeBufferPointer<UInt8>
        var index = 0

        init(bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

        private var current: UInt8? { index < bytes.count ? bytes[index] : nil }

        mutating func skipSpace() {
            while let byte = current, byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 { index += 1 }
        }

        mutating func value(depth: Int) -> Bool {
            skipSpace()
            guard let byte = current else { return false }
            switch byte {
            case UInt8(ascii: "{"): return depth < PlainJSON.maximumDepth && object(depth: depth + 1)
            case UInt8(ascii: "["): return depth < PlainJSON.maximumDepth && array(depth: depth + 1)
            case UInt8(ascii: "\""): return string()
            case UInt8(ascii: "t"): return literal("true")
            case UInt8(ascii: "f"): return literal("false")
            case UInt8(ascii: "n"): return literal("null")
            default: return number()
            }
        }

        private mutating func object(depth: Int) -> Bool {
            index += 1
            skipSpace()
            if current == UInt8(ascii: "}") {
                index += 1
                return true
            }
            while true {
                skipSpace()
                guard current == UInt8(ascii: "\""), string() else { return false }
                skipSpace()
                guard current == UInt8(ascii: ":") else { return false }
                index += 1
                guard value(depth: depth) else { return false }
                skipSpace()
                switch current {
                case UInt8(ascii: ","): index += 1
                case UInt8(ascii: "}"):
                    index += 1
                    return true
                default: return false
                }
            }
        }

        private mutating func array(depth: Int) -> Bool {
            index += 1
            skipSpace()
            if current == UInt8(ascii: "]") {
                index += 1
                return true
            }
            while true {
                guard value(depth: depth) else { return false }
                skipSpace()
                switch current {
                case UInt8(ascii: ","): index += 1
                case UInt8(ascii: "]"):
                    index += 1
                    return true
                default: return false
                }
            }
        }

        /// A string literal; its bytes are a Swift string's, so valid UTF-8 already.
        private mutating func string() -> Bool {
            index += 1
            while let byte = current {
                index += 1
                switch byte {
                case UInt8(ascii: "\""): return true
                case UInt8(ascii: "\\"):
                    guard let escaped = current else { return false }
                    index += 1
                    switch escaped {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"),
                        UInt8(ascii: "f"), UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
                        continue
                    case UInt8(ascii: "u"):
                        guard let scalar = hexQuad(), !(0xD800...0xDFFF).contains(scalar) else { return false }
                    default: return false
                    }
                case 0..<0x20: return false
                default: continue
                }
            }
            return false
        }

        private mutating func hexQuad() -> UInt32? {
            guard index + 4 <= bytes.count else { return nil }
            var value: UInt32 = 0
            for _ in 0..<4 {
                let byte = bytes[index]
                let digit: UInt8
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
                case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
                case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
                default: return nil
                }
                value = value << 4 | UInt32(digit)
                index += 1
            }
            return value
        }

        private mutating func literal(_ word: StaticString) -> Bool {
            let count = word.utf8CodeUnitCount
            guard index + count <= bytes.count else { return false }
            for offset in 0..<count where bytes[index + offset] != word.utf8Start[offset] { return false }
            index += count
            return true
        }

        /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?` with at most 15 digits in all.
        private mutating func number() -> Bool {
            if current == UInt8(ascii: "-") { index += 1 }
            var digits = 0
            guard let first = current, first >= UInt8(ascii: "0"), first <= UInt8(ascii: "9") else { return false }
            if first == UInt8(ascii: "0") {
                index += 1
                digits = 1
            } else {
                digits += skipDigits()
            }
            if current == UInt8(ascii: ".") {
                index += 1
                let fraction = skipDigits()
                guard fraction > 0 else { return false }
                digits += fraction
            }
            guard digits <= 15 else { return false }
            // An exponent, or a digit after a leading zero: Foundation decides.
            if let next = current,
                next == UInt8(ascii: "e") || next == UInt8(ascii: "E")
                    || (next >= UInt8(ascii: "0") && next <= UInt8(ascii: "9"))
            {
                return false
            }
            return true
        }

        private mutating func skipDigits() -> Int {
            let start = index
            while let byte = current, byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") { index += 1 }
            return index - start
        }
    }
}
