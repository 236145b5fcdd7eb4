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

    /// Whether a URL has a password in its user information (`scheme://user:secret@host`).
    static func holdsPassword(_ url: String) -> Bool {
        guard let scheme = url.range(of: "://") else { return false }
        let authority = url[scheme.upperBound...].prefix { $0 != "/" }
        guard let at = authority.lastIndex(of: "@") else { return false }
        return authority[..<at].contains(":")
    }
}
