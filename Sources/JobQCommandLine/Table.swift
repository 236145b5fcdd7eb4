import Foundation
import JobQCore

/// Left-aligned columns separated by two spaces.
package enum Table {
    /// The rows as columns; control characters in a cell (a name stored before they were
    /// refused, an error message) are shown escaped, so no cell can move the cursor, clear the
    /// screen or break a row in two.
    package static func render(_ rows: [[String]]) -> String {
        let rows = rows.map { $0.map(printable) }
        guard let width = rows.map(\.count).max() else { return "" }
        var widths = [Int](repeating: 0, count: width)
        for row in rows { for (i, cell) in row.enumerated() { widths[i] = max(widths[i], cell.count) } }
        return rows.map { row in
            row.enumerated().map { i, cell in
                i == row.count - 1 ? cell : cell.padding(toLength: widths[i], withPad: " ", startingAt: 0)
            }.joined(separator: "  ")
        }.joined(separator: "\n")
    }

    /// `text` with each control character (C0, DEL, C1) written as `\u{1B}`, `\n`, `\t`...
    package static func printable(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: Label.isControl) else { return text }
        var out = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where Label.isControl(scalar): out += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }
}
