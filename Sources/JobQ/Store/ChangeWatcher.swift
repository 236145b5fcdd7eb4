import Foundation
import GRDB

/// Notices commits by other processes within a couple of milliseconds, cheaply.
///
/// `PRAGMA data_version` on one dedicated connection changes whenever another connection
/// commits; reading it touches no table, so polling it every few milliseconds costs far less
/// than polling for work. A change pokes the claim loop, which then looks for work.
struct ChangeWatcher {
    let connection: DatabaseQueue

    init?(path: String?) {
        guard let path else { return nil }
        var config = Configuration()
        config.readonly = true
        config.busyMode = .timeout(1)
        config.label = "jobq.change-watcher"
        guard let connection = try? DatabaseQueue(path: path, configuration: config) else { return nil }
        self.connection = connection
    }

    func version() -> Int? {
        try? connection.read { db in try Int.fetchOne(db, sql: "PRAGMA data_version") }
    }

    /// Pokes `signal` (and calls `also`) on every change until the task is cancelled.
    func run(every interval: Duration, signal: WakeSignal, also: (@Sendable () -> Void)? = nil) async {
        // data_version is per connection: one connection, kept open, is the point of this type.
        // A plain read transaction would not see a new value without ending first, which the
        // GRDB read above does on every call.
        var last = version()
        while !Task.isCancelled {
            try? await Task.sleep(for: interval)
            let current = version()
            if current != last {
                last = current
                // Not "work arrived": an idle pool first checks with a read, so commits that
                // add no claimable work never make it take the write lock.
                signal.poke()
                also?()
            }
        }
    }
}
