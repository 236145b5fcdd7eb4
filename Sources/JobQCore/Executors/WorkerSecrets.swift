import CProcessControl
import Foundation

/// The secrets a worker process was started with, wiped from its environment once read.
///
/// A `shell` job's command never gets them in its own environment (``ShellExecutor/isWithheld(_:)``),
/// but it runs as the worker's user, and on Linux any process of that user (root included)
/// can read the environment the worker started with from `/proc/PID/environ`: `cat
/// /proc/$PPID/environ` in a command showed `PGPASSWORD`. `jobq work` wipes these values in
/// place once the store is open (its settings hold what they need), so that the file shows
/// empty values.
///
/// An app that embeds a worker pool keeps its environment as it is (it may read it again):
/// keep secrets out of a process that runs untrusted commands, pass them in a file only the
/// worker's user can read (`PGPASSFILE`, `--token-file`), or run commands as another user.
///
/// ```swift
/// let queue = try await JobQueue(postgres: url)  // reads PGPASSWORD
/// WorkerSecrets.wipe()
/// ```
package enum WorkerSecrets {
    /// Variables that hold secrets outright.
    static let names = ["PGPASSWORD", "JOBQ_DASHBOARD_TOKEN"]

    /// Wipes the values of ``names``, and of `JOBQ_DB` when its URL holds a password. Returns
    /// the names wiped.
    @discardableResult
    package static func wipe() -> [String] {
        var wiped: [String] = []
        var candidates = names
        if let db = ProcessInfo.processInfo.environment["JOBQ_DB"], Self.holdsPassword(db) {
            candidates.append("JOBQ_DB")
        }
        for name in candidates where jobq_scrub_environment_value(name) > 0 { wiped.append(name) }
        return wiped
    }

    /// Overwrites with `*`, in place, the password of every URL among this process's raw
    /// arguments (`--db postgres://user:secret@host/db`), so that neither another process
    /// reading `/proc/PID/cmdline` nor a `ps` listing shows it once the process has read its
    /// arguments: call it after `CommandLine.arguments` was first read (Swift copies them then).
    /// A password file (`PGPASSFILE`) or `JOBQ_DB` keeps it off the command line from the start.
    /// Returns how many passwords were hidden.
    @discardableResult
    package static func hidePasswordsInArguments() -> Int {
        var hidden = 0
        for index in 1..<Int(CommandLine.argc) {
            guard let raw = CommandLine.unsafeArgv[index] else { continue }
            let length = strlen(raw)
            let bytes = UnsafeMutableRawPointer(raw).assumingMemoryBound(to: UInt8.self)
            let text = String(decoding: UnsafeBufferPointer(start: bytes, count: length), as: UTF8.self)
            guard let range = passwordRange(text) else { continue }
            let start = text.utf8.distance(from: text.startIndex, to: range.lowerBound)
            let count = text.utf8.distance(from: range.lowerBound, to: range.upperBound)
            for offset in start..<(start + count) { bytes[offset] = UInt8(ascii: "*") }
            hidden += 1
        }
        return hidden
    }

    /// Where the password of a URL in `text` is (`scheme://user:SECRET@host`, also after an
    /// option's `=`), nil when it has none.
    static func passwordRange(_ text: String) -> Range<String.Index>? {
        guard let scheme = text.range(of: "://") else { return nil }
        let authority = text[scheme.upperBound...].prefix { $0 != "/" && $0 != "?" }
        guard let at = authority.lastIndex(of: "@"), let colon = authority[..<at].firstIndex(of: ":"),
            authority.index(after: colon) < at
        else { return nil }
        return authority.index(after: colon)..<at
    }

    /// Whether a URL has a password in its user information (`scheme://user:secret@host`).
    static func holdsPassword(_ url: String) -> Bool { passwordRange(url) != nil }
}
