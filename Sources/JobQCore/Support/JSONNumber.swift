/// A JSON number's exact value, read from its text: what filters compare payload numbers by, on
/// every store (SQLite through a function of jobq's, PostgreSQL as `numeric`), so that
/// `/amount > 9223372036854775807` or `/x = 0.1` select the same jobs on both, beyond what a
/// 64-bit integer or a double holds.
///
/// The numbers jobq accepts in payloads and filters lie within ``exponentLimit`` decimal places
/// either way (1e-10000 to 1e10000 in magnitude): PostgreSQL's `numeric` holds no more, and a
/// payload it could not compare would make a filter fail for every job.
///
/// ```swift
/// JSONNumber.compare("123456789012345678901234567890", "1.2345678901234567890123456789e29")  // 0
/// JSONNumber.compare("0.1", "1e-1")  // 0
/// ```
package struct JSONNumber: Sendable, Equatable {
    /// Whether it is below zero (never for zero).
    let negative: Bool
    /// Its significant digits (ASCII), without leading or trailing zeros; empty for zero.
    let digits: [UInt8]
    /// Where the decimal point stands: the value is 0.DIGITS × 10^point.
    let point: Int

    /// The furthest decimal place, either way, of a digit of an accepted number.
    package static let exponentLimit = 10_000

    /// Reads `text`, a JSON number; nil when it is not one.
    package init?(_ text: some Collection<UInt8>) {
        var bytes = text.makeIterator()
        var next = bytes.next()
        var negative = false
        if next == UInt8(ascii: "-") {
            negative = true
            next = bytes.next()
        }
        var mantissa: [UInt8] = []
        var integerDigits = 0
        var sawDigit = false
        while let byte = next, (48...57).contains(byte) {
            mantissa.append(byte)
            integerDigits += 1
            sawDigit = true
            next = bytes.next()
        }
        guard sawDigit, !(integerDigits > 1 && mantissa.first == UInt8(ascii: "0")) else { return nil }
        if next == UInt8(ascii: ".") {
            next = bytes.next()
            var fraction = false
            while let byte = next, (48...57).contains(byte) {
                mantissa.append(byte)
                fraction = true
                next = bytes.next()
            }
            guard fraction else { return nil }
        }
        var exponent = 0
        if next == UInt8(ascii: "e") || next == UInt8(ascii: "E") {
            next = bytes.next()
            var exponentNegative = false
            if next == UInt8(ascii: "+") || next == UInt8(ascii: "-") {
                exponentNegative = next == UInt8(ascii: "-")
                next = bytes.next()
            }
            var exponentDigits = false
            while let byte = next, (48...57).contains(byte) {
                // Saturates: anything this far out is refused anyway.
                exponent = min(exponent * 10 + Int(byte - 48), 1_000_000_000)
                exponentDigits = true
                next = bytes.next()
            }
            guard exponentDigits else { return nil }
            if exponentNegative { exponent = -exponent }
        }
        guard next == nil else { return nil }
        var point = integerDigits + exponent
        var start = 0
        while start < mantissa.count, mantissa[start] == UInt8(ascii: "0") {
            start += 1
            point -= 1
        }
        var end = mantissa.count
        while end > start, mantissa[end - 1] == UInt8(ascii: "0") { end -= 1 }
        digits = Array(mantissa[start..<end])
        self.point = digits.isEmpty ? 0 : point
        self.negative = negative && !digits.isEmpty
    }

    /// Whether every digit lies within ``exponentLimit`` places of the decimal point (the first
    /// digit's place is `point - 1`, the last one's `point - digits.count`).
    package var isWithinLimits: Bool {
        digits.isEmpty || (point - 1 <= Self.exponentLimit && point - digits.count >= -Self.exponentLimit)
    }

    /// -1, 0 or 1 as `a` is below, equal to or above `b`; nil when either is not a JSON number.
    package static func compare(_ a: some Collection<UInt8>, _ b: some Collection<UInt8>) -> Int? {
        guard let a = JSONNumber(a), let b = JSONNumber(b) else { return nil }
        return a.compared(to: b)
    }

    package static func compare(_ a: String, _ b: String) -> Int? { compare(Array(a.utf8), Array(b.utf8)) }

    /// -1, 0 or 1 as this is below, equal to or above `other`.
    package func compared(to other: JSONNumber) -> Int {
        if negative != other.negative { return negative ? -1 : 1 }
        let magnitude = Self.compareMagnitudes(self, other)
        return negative ? -magnitude : magnitude
    }

    private static func compareMagnitudes(_ a: JSONNumber, _ b: JSONNumber) -> Int {
        if a.digits.isEmpty || b.digits.isEmpty { return a.digits.isEmpty ? (b.digits.isEmpty ? 0 : -1) : 1 }
        if a.point != b.point { return a.point < b.point ? -1 : 1 }
        for (x, y) in zip(a.digits, b.digits) where x != y { return x < y ? -1 : 1 }
        return a.digits.count == b.digits.count ? 0 : (a.digits.count < b.digits.count ? -1 : 1)
    }
}
