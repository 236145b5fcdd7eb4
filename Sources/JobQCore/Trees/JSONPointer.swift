/// A JSON Pointer (RFC 6901), as a tree node's `each` names a place in its parent's result:
/// `""` is the whole value, `/recipeIDs` a member, `/pages/0/ids` a path through an array.
package struct JSONPointer: Sendable, Hashable {
    package let text: String
    /// The reference tokens, unescaped (`~1` is `/`, `~0` is `~`).
    package let tokens: [String]

    package init(_ text: String) throws(JobQueueError) {
        self.text = text
        guard !text.isEmpty else {
            tokens = []
            return
        }
        guard text.hasPrefix("/") else {
            throw .invalidInput(
                "'\(JSONText.preview(text))' is not a JSON Pointer: it must be \"\" (the whole result) or start with '/', e.g. \"/recipeIDs\""
            )
        }
        var tokens: [String] = []
        for raw in text.dropFirst().split(separator: "/", omittingEmptySubsequences: false) {
            var token = ""
            var characters = raw.makeIterator()
            while let character = characters.next() {
                guard character == "~" else {
                    token.append(character)
                    continue
                }
                switch characters.next() {
                case "0": token.append("~")
                case "1": token.append("/")
                default:
                    throw .invalidInput(
                        "'\(JSONText.preview(text))' is not a JSON Pointer: '~' must be followed by 0 (for ~) or 1 (for /)"
                    )
                }
            }
            // SQLite's JSON paths quote member names, with no escape for a quote.
            guard !token.contains("\"") else {
                throw .invalidInput(
                    "'\(JSONText.preview(text))': member names with a double quote cannot be pointed at")
            }
            tokens.append(token)
        }
        self.tokens = tokens
    }

    /// Whether `token` can index an array: a non-negative whole number without leading zeros.
    package static func isIndex(_ token: String) -> Bool {
        guard let first = token.first, token.allSatisfy(\.isASCIIDigit), token.count <= 18 else { return false }
        return first != "0" || token == "0"
    }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { isASCII && isNumber }
}
