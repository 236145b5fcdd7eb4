import Foundation

/// The free-form names users give (queues, executors, lanes, partitions, batches, unique keys,
/// workflows): any printable text, 1 to 200 bytes of UTF-8.
///
/// Bytes, not characters: a store's index and a terminal pay for bytes, and 200 characters of
/// combining marks can be kilobytes. No control characters (C0, DEL, C1): a NUL cannot be
/// stored on PostgreSQL, and newlines or escape sequences printed raw by `jobq status` would
/// let a name rewrite the operator's terminal.
///
/// ```swift
/// try Label.check("billing", what: "queue name")          // fine
/// try Label.check("a\u{1B}[2J", what: "queue name")      // throws .invalidInput
/// ```
package enum Label {
    package static let maximumBytes = 200

    package static func check(_ name: String, what: String, hint: String = "") throws(JobQueueError) {
        let bytes = name.utf8.count
        guard bytes == 0 || bytes > maximumBytes else {
            if let control = name.unicodeScalars.first(where: isControl) {
                throw .invalidInput(
                    "\(what) '\(shown(name))' holds the control character U+\(String(format: "%04X", control.value)); "
                        + "use printable characters only\(hint)")
            }
            return
        }
        throw .invalidInput(
            "\(what) must be 1 to \(maximumBytes) bytes of UTF-8, got \(bytes) bytes"
                + (bytes == 0 ? "" : ": '\(shown(name))'") + hint)
    }

    package static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
    }

    /// `name` as it may be printed in a message: control characters as `?`, shortened.
    package static func shown(_ name: String) -> String {
        let clean = String(String.UnicodeScalarView(name.unicodeScalars.prefix(80).map { isControl($0) ? "?" : $0 }))
        return name.unicodeScalars.count > 80 ? String(clean.prefix(77)) + "..." : clean
    }
}

/// The names operators type (schedules, events, trigger tasks): printable, and safe in a shell
/// and a URL path.
package enum Names {
    package static let allowed = CharacterSet.alphanumerics.union(CharacterSet(charactersIn: "-_.:/@"))

    package static func check(_ name: String, what: String) throws(JobQueueError) {
        guard !name.isEmpty, name.count <= 200, name.unicodeScalars.allSatisfy({ allowed.contains($0) }) else {
            // Control characters are shown as `?`, so the message itself prints cleanly.
            throw .invalidInput("\(what) '\(Label.shown(name))' must be 1 to 200 letters, digits or - _ . : / @")
        }
    }
}
