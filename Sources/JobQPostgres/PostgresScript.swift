import JobQCore
import JobQSQL

/// Splits a SQL file into its statements, for a driver that sends one statement at a time
/// (postgres-nio speaks only the extended query protocol).
///
/// A `;` ends a statement unless it is inside a quoted string (`'...'`, `"..."`, `$tag$...$tag$`)
/// or a comment (`-- ...`, `/* ... */`). Statements that hold only comments are dropped.
///
/// ```swift
/// try PostgresScript.statements(in: "CREATE TABLE a (x int); -- done\nSELECT ';'")
/// // ["CREATE TABLE a (x int)", "-- done\nSELECT ';'"]
/// ```
enum PostgresScript {
    static func statements(in sql: String) throws -> [String] {
        let characters = Array(sql.unicodeScalars)
        var statements: [String] = []
        var current = String.UnicodeScalarView()
        var hasCode = false
        var index = 0

        func finish() {
            let text = String(current).trimmingCharacters(in: .whitespacesAndNewlines)
            if hasCode, !text.isEmpty { statements.append(text) }
            current = String.UnicodeScalarView()
            hasCode = false
        }
        func copy(until end: Int) {
            current.append(contentsOf: characters[index..<end])
            index = end
        }
        func find(_ pattern: [Unicode.Scalar], from start: Int) -> Int? {
            guard pattern.count <= characters.count else { return nil }
            var position = start
            while position + pattern.count <= characters.count {
                if Array(characters[position..<(position + pattern.count)]) == pattern { return position }
                position += 1
            }
            return nil
        }

        while index < characters.count {
            let character = characters[index]
            let next: Unicode.Scalar? = index + 1 < characters.count ? characters[index + 1] : nil
            switch character {
            case ";":
                index += 1
                finish()
            case "-" where next == "-":
                let end = find(["\n"], from: index) ?? characters.count
                copy(until: end)
            case "/" where next == "*":
                guard let end = find(["*", "/"], from: index + 2) else {
                    throw JobQueueError.invalidInput("a /* comment in the SQL is not closed")
                }
                copy(until: end + 2)
            case "'", "\"":
                // A doubled quote inside is an escaped one: the scan simply goes on past it.
                var position = index + 1
                while true {
                    guard let end = find([character], from: position) else {
                        throw JobQueueError.invalidInput("a \(character) quoted text in the SQL is not closed")
                    }
                    if end + 1 < characters.count, characters[end + 1] == character {
                        position = end + 2
                    } else {
                        position = end + 1
                        break
                    }
                }
                hasCode = true
                copy(until: position)
            case "$":
                // $tag$ ... $tag$ (the tag may be empty); a lone $ (a parameter like $1) is code.
                var tagEnd = index + 1
                while tagEnd < characters.count, characters[tagEnd] == "_" || characters[tagEnd].properties.isAlphabetic
                { tagEnd += 1 }
                if tagEnd < characters.count, characters[tagEnd] == "$" {
                    let delimiter = Array(characters[index...tagEnd])
                    guard let end = find(delimiter, from: tagEnd + 1) else {
                        throw JobQueueError.invalidInput(
                            "a \(String(String.UnicodeScalarView(delimiter))) quoted text in the SQL is not closed")
                    }
                    hasCode = true
                    copy(until: end + delimiter.count)
                } else {
                    hasCode = true
                    copy(until: index + 1)
                }
            default:
                if !character.properties.isWhitespace { hasCode = true }
                copy(until: index + 1)
            }
        }
        finish()
        return statements
    }
}
