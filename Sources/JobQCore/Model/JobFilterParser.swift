import Foundation

/// Reads the language ``JobFilter`` documents, one term at a time, so that an error can name
/// the character where reading stopped.
struct JobFilterParser {
    private typealias F = JobFilter
    private let source: String
    private let characters: [Character]
    private var position = 0

    init(_ source: String) {
        self.source = source
        self.characters = Array(source)
    }

    mutating func parse() throws(JobQueueError) -> [JobFilter.Term] {
        guard characters.count <= JobFilter.maximumLength else {
            throw .invalidInput(
                "a filter is at most \(JobFilter.maximumLength) characters, got \(characters.count); narrow it with fewer terms"
            )
        }
        var terms: [JobFilter.Term] = []
        skipSpaces()
        while position < characters.count {
            guard terms.count < JobFilter.maximumTerms else {
                throw failure("a filter holds at most \(JobFilter.maximumTerms) terms")
            }
            terms.append(try term())
            let end = position
            skipSpaces()
            if position < characters.count, position == end {
                throw failure("expected a space before the next term")
            }
        }
        return terms
    }

    // MARK: Terms

    private mutating func term() throws(JobQueueError) -> JobFilter.Term {
        var negated = false
        if peek == "-" {
            negated = true
            position += 1
        }
        if peek == "/" || (peek == "\"" && peek(at: position + 1) == "/") {
            let (condition, inverted) = try payloadTerm()
            return F.Term(negated: negated != inverted, condition: condition)
        }
        return F.Term(negated: negated, condition: try fieldTerm())
    }

    /// A payload term; `inverted` for `!=`, which is `=` negated.
    private mutating func payloadTerm() throws(JobQueueError) -> (F.Condition, inverted: Bool) {
        let start = position
        let text: String
        if peek == "\"" {
            text = try quoted()
        } else {
            text = take { !$0.isWhitespace && !"=<>!".contains($0) }
        }
        let pointer: PayloadPointer
        do {
            pointer = try PayloadPointer(text)
        } catch {
            throw failure(error.description, at: start)
        }
        skipSpaces()
        if word(ahead: "exists") {
            position += "exists".count
            return (.payloadExists(pointer), false)
        }
        let operatorStart = position
        let op = take { "=<>!".contains($0) }
        skipSpaces()
        switch op {
        case "=": return (.payloadEquals(pointer, try jsonScalar(after: op)), false)
        // Every job whose member is not that value, jobs without the member included.
        case "!=": return (.payloadEquals(pointer, try jsonScalar(after: op)), true)
        case "<", "<=", ">", ">=":
            let value = try jsonScalar(after: op)
            switch value {
            case .number, .string: return (.payloadCompare(pointer, F.Order(rawValue: op)!, value), false)
            case .bool, .null:
                throw failure("'\(op)' orders numbers and strings only", at: operatorStart)
            }
        case "":
            throw failure(
                "expected an operator after the pointer \(text): =, !=, <, <=, >, >= or `exists`", at: operatorStart)
        default:
            throw failure("unknown operator '\(op)'; use =, !=, <, <=, >, >= or `exists`", at: operatorStart)
        }
    }

    private mutating func fieldTerm() throws(JobQueueError) -> F.Condition {
        let start = position
        let name = take { $0.isLetter }
        guard !name.isEmpty else {
            throw failure("expected a field such as state:dead, or a payload pointer such as /customer")
        }
        let operatorStart = position
        let op = take { ":~=<>!".contains($0) }
        if let field = F.TextField(rawValue: name) {
            switch op {
            case ":":
                var values: [String] = []
                for value in try valueList(field.rawValue) { values.append(try textValue(field, value)) }
                return .textIn(field, values)
            case "~" where field != .state:
                return .textContains(field, try value(after: "\(name)~").text)
            default:
                let ops = field == .state ? "':'" : "':' (one of) or '~' (contains)"
                throw failure("\(name) takes \(ops), as in \(example(field))", at: operatorStart)
            }
        }
        if let field = F.IntegerField(rawValue: name) {
            switch op {
            case ":":
                var values: [Int64] = []
                for value in try valueList(name) { values.append(try integer(value, name)) }
                return .integerIn(field, values)
            case "=", "<", "<=", ">", ">=":
                let value = try value(after: "\(name)\(op)")
                return .integerCompare(field, F.Order(rawValue: op)!, try integer(value, name))
            default:
                throw failure("\(name) takes ':', '=', '<', '<=', '>' or '>=', as in \(name)>1", at: operatorStart)
            }
        }
        if let field = F.TimeField(rawValue: name) {
            guard ["<", "<=", ">", ">="].contains(op), let order = F.Order(rawValue: op) else {
                throw failure(
                    "\(name) takes '<' or '>' (and '<=', '>='), as in \(name)<24h (less than a day ago) or "
                        + "\(name)>=2026-11-01", at: operatorStart)
            }
            let value = try value(after: "\(name)\(op)")
            if let date = Self.date(value.text) { return .timeCompare(field, order, date) }
            do {
                return .ageCompare(field, order, try DurationParser.parse(value.text))
            } catch {
                throw failure(
                    "'\(value.text)' is neither a duration (30m, 24h, 7d) nor a time (2026-11-01 or "
                        + "2026-11-01T12:00:00Z)", at: value.start)
            }
        }
        let fields =
            F.TextField.allCases.map(\.rawValue) + F.IntegerField.allCases.map(\.rawValue)
            + F.TimeField.allCases.map(\.rawValue)
        throw failure(
            "unknown field '\(name)'; fields are \(fields.joined(separator: ", ")), and payload members start with /",
            at: start)
    }

    private func example(_ field: F.TextField) -> String {
        field == .state ? "state:dead,cancelled" : "\(field.rawValue):value or \(field.rawValue)~part"
    }

    // MARK: Values

    private struct Value {
        var text: String
        var start: Int
    }

    /// A bare word (up to a space or a comma) or a JSON string in double quotes.
    private mutating func value(after what: String, stoppingAtComma: Bool = false) throws(JobQueueError) -> Value {
        let start = position
        if peek == "\"" { return Value(text: try quoted(), start: start) }
        let text = take { !$0.isWhitespace && !(stoppingAtComma && $0 == ",") && $0 != "\"" }
        guard !text.isEmpty else { throw failure("expected a value after \(what)") }
        return Value(text: text, start: start)
    }

    /// `a,b,"c d"`: one value or several, separated by commas.
    private mutating func valueList(_ name: String) throws(JobQueueError) -> [Value] {
        var values = [try value(after: "\(name):", stoppingAtComma: true)]
        while peek == "," {
            position += 1
            values.append(try value(after: "a comma", stoppingAtComma: true))
        }
        return values
    }

    private func textValue(_ field: F.TextField, _ value: Value) throws(JobQueueError) -> String {
        guard field == .state else { return value.text }
        guard JobState(rawValue: value.text) != nil else {
            throw failure(
                "unknown state '\(value.text)'; states are \(JobState.allCases.map(\.rawValue).joined(separator: ", "))",
                at: value.start)
        }
        return value.text
    }

    private func integer(_ value: Value, _ name: String) throws(JobQueueError) -> Int64 {
        guard let number = Int64(value.text) else {
            throw failure("\(name) compares whole numbers; '\(value.text)' is not one", at: value.start)
        }
        return number
    }

    /// A JSON string, number, `true`, `false` or `null`.
    private mutating func jsonScalar(after op: String) throws(JobQueueError) -> F.JSONScalar {
        let start = position
        if peek == "\"" { return .string(try quoted()) }
        let text = take { !$0.isWhitespace }
        switch text {
        case "true": return .bool(true)
        case "false": return .bool(false)
        case "null": return .null
        case "": throw failure("expected a JSON value after '\(op)': a \"string\", a number, true, false or null")
        default:
            guard Self.isJSONNumber(text), JSONNumber(text.utf8)?.isWithinLimits == true else {
                throw failure(
                    "'\(text)' is not a JSON value: write strings in double quotes (\"\(text)\"), numbers as 100 "
                        + "or 2.5 (within 1e-\(JSONNumber.exponentLimit) to 1e\(JSONNumber.exponentLimit) in magnitude), "
                        + "or true, false, null", at: start)
            }
            return .number(text)
        }
    }

    /// A JSON string literal starting at the current position, unescaped.
    private mutating func quoted() throws(JobQueueError) -> String {
        let start = position
        position += 1
        var escaped = false
        while position < characters.count {
            let character = characters[position]
            position += 1
            if escaped {
                escaped = false
            } else if character == "\\" {
                escaped = true
            } else if character == "\"" {
                let literal = String(characters[start..<position])
                guard let text = try? JSONDecoder.jobq.decode(String.self, from: Data(literal.utf8)) else {
                    throw failure("\(literal) is not a valid JSON string (check its backslash escapes)", at: start)
                }
                guard !text.contains("\u{0}") else {
                    throw failure("\(literal) holds NUL (U+0000), which no stored text holds: leave it out", at: start)
                }
                return text
            }
        }
        throw failure("this quote is never closed", at: start)
    }

    static func isJSONNumber(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        var index = 0
        func digits() -> Int {
            let from = index
            while index < bytes.count, (48...57).contains(bytes[index]) { index += 1 }
            return index - from
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "-") { index += 1 }
        guard index < bytes.count else { return false }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
        } else if digits() == 0 {
            return false
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            guard digits() > 0 else { return false }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
                index += 1
            }
            guard digits() > 0 else { return false }
        }
        return index == bytes.count
    }

    /// `2026-11-01` (midnight UTC) or an ISO 8601 time.
    static func date(_ text: String) -> Date? {
        if text.count == 10, text.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == "-") }) {
            return ISO8601.parse(text + "T00:00:00Z")
        }
        return text.contains("T") ? ISO8601.parse(text) : nil
    }

    // MARK: Characters

    private var peek: Character? { peek(at: position) }

    private func peek(at index: Int) -> Character? { index < characters.count ? characters[index] : nil }

    private mutating func take(while accept: (Character) -> Bool) -> String {
        let start = position
        while position < characters.count, accept(characters[position]) { position += 1 }
        return String(characters[start..<position])
    }

    private mutating func skipSpaces() {
        while position < characters.count, characters[position].isWhitespace { position += 1 }
    }

    /// Whether `word` comes next, ending at a space or the end.
    private func word(ahead word: String) -> Bool {
        let end = position + word.count
        guard end <= characters.count, String(characters[position..<end]) == word else { return false }
        return end == characters.count || characters[end].isWhitespace
    }

    /// An error naming the character (counted from 1) where reading stopped, with the
    /// expression around it and a caret under that character.
    private func failure(_ message: String, at index: Int? = nil) -> JobQueueError {
        let index = min(index ?? position, characters.count)
        let from = max(0, index - 40)
        let to = min(characters.count, index + 40)
        let excerpt = String(characters[from..<to]).map { $0.isWhitespace ? " " : $0 }
        let prefix = from > 0 ? "..." : ""
        let caret = String(repeating: " ", count: prefix.count + index - from) + "^"
        return .invalidInput(
            "invalid filter at character \(index + 1): \(message)\n  \(prefix)\(String(excerpt))\n  \(caret)")
    }
}
