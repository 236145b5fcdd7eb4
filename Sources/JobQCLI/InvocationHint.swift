import Foundation

/// How the user can run this same `jobq` binary from where they stand, for the commands that
/// hints print: `jobq` when it is on PATH, else the path of the binary (relative when it is
/// under the current directory, as after `swift run jobq demo`).
enum InvocationHint {
    static let command: String = {
        guard let executable = Bundle.main.executableURL?.resolvingSymlinksInPath() else { return "jobq" }
        let fileManager = FileManager.default
        func same(_ path: String) -> Bool {
            fileManager.isExecutableFile(atPath: path)
                && URL(fileURLWithPath: path).resolvingSymlinksInPath() == executable
        }
        let searchPath = ProcessInfo.processInfo.environment["PATH"] ?? ""
        if searchPath.split(separator: ":").contains(where: { same("\($0)/jobq") }) { return "jobq" }
        let directory = fileManager.currentDirectoryPath
        // SwiftPM's short links first: `.build/debug/jobq` rather than `.build/x86_64-unknown-linux-gnu/debug/jobq`.
        for candidate in [".build/debug/jobq", ".build/release/jobq"] where same("\(directory)/\(candidate)") {
            return candidate
        }
        var path = executable.path
        if path.hasPrefix(directory + "/") { path = String(path.dropFirst(directory.count + 1)) }
        return quoted(path)
    }()

    /// A shell word for `text`: as is when it is plain, else in single quotes.
    static func quoted(_ text: String) -> String {
        let plain = CharacterSet.alphanumerics.union(CharacterSet(charactersIn: "-_./:@%+="))
        if !text.isEmpty, text.unicodeScalars.allSatisfy({ plain.contains($0) }) { return text }
        return "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }
}
