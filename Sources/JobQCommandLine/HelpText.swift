/// A command's `discussion`, written in the source as lines of up to ~100 characters, as help
/// text that wraps cleanly at any terminal width.
///
/// ArgumentParser wraps each line of a discussion at the terminal's width but keeps the line
/// breaks it is given, so a paragraph written as lines of 90-100 characters came out on an
/// 80-column terminal with a word or two dangling after every line. Here prose lines are joined
/// into paragraphs (which ArgumentParser then wraps once); blank lines still separate
/// paragraphs, and example lines (a `jobq` command, or an indented line) keep lines of their own.
///
/// ```swift
/// discussion: helpText("""
///     jobq batch close import
///     Closing a batch lets it fire once its members are final.
///     """)
/// ```
package func helpText(_ source: String) -> String {
    var lines: [String] = []
    var paragraph: [Substring] = []
    func endParagraph() {
        if !paragraph.isEmpty { lines.append(paragraph.joined(separator: " ")) }
        paragraph = []
    }
    for line in source.split(separator: "\n", omittingEmptySubsequences: false) {
        if line.allSatisfy(\.isWhitespace) {
            endParagraph()
            lines.append("")
        } else if line.hasPrefix("jobq ") || line.first?.isWhitespace == true {
            endParagraph()
            lines.append(String(line))
        } else {
            paragraph.append(line)
        }
    }
    endParagraph()
    return lines.joined(separator: "\n")
}
