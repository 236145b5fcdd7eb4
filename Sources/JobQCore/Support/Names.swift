import Foundation

/// The names operators type (schedules, events, trigger tasks): printable, and safe in a shell
/// and a URL path.
enum Names {
    static let allowed = CharacterSet.alphanumerics.union(CharacterSet(charactersIn: "-_.:/@"))

    static func check(_ name: String, what: String) throws(JobQueueError) {
        guard !name.isEmpty, name.count <= 200, name.unicodeScalars.allSatisfy({ allowed.contains($0) }) else {
            // Control characters are shown as `?`, so the message itself prints cleanly.
            let shown = name.unicodeScalars.map { $0.properties.generalCategory == .control ? "?" : String($0) }
                .joined()
            throw .invalidInput("\(what) '\(JSONText.preview(shown))' must be 1 to 200 letters, digits or - _ . : / @")
        }
    }
}
