import Dispatch
import GRDBSQLite
import JobQCore
import JobQSQL
import Synchronization

/// Copies a store's WAL back into the database file on a connection and a thread of its own,
/// so that no commit waits for it.
///
/// SQLite's default is to checkpoint inside the commit that takes the WAL past 1000 pages: that
/// commit copies every page and syncs the database file before it returns, about a hundred
/// commits' time, and a lone job that paid it set the 99th percentile of pick-up latency. Here the store's writer connection reports the WAL's
/// size after each commit (``install(on:)``, `sqlite3_wal_hook`, which replaces SQLite's own
/// checkpoint), and past ``backgroundThreshold`` pages a passive checkpoint runs on this
/// object's connection: it takes no write lock, so writers go on meanwhile.
///
/// A WAL is started over only when a write begins with every page of it copied back, which a
/// writer that never pauses (a drain, a loop of enqueues) never gives a background checkpoint:
/// then the commit that takes the WAL past ``inlineThreshold`` pages checkpoints itself, as
/// SQLite would have done at 1000, and the WAL starts over. A larger threshold slows single
/// enqueues (a bigger WAL, written further out).
///
/// Each background checkpoint syncs the WAL and the database file. Started again after every
/// commit past the threshold, they ran back to back while a writer never paused, each copying
/// the few pages committed since the last: many times the syncs of inline checkpoints, which
/// slowed the commits beside them. So a background checkpoint starts only once the WAL holds
/// ``backgroundStep`` pages more than the last one copied.
final class WALCheckpointer: Sendable {
    /// Pages in the WAL after which a background checkpoint starts (SQLite's own default).
    static let backgroundThreshold: Int32 = 1000
    /// Pages in the WAL after which the committing connection checkpoints itself (a writer that
    /// never paused long enough for a background checkpoint to let the WAL start over).
    static let inlineThreshold: Int32 = 2000
    /// Pages committed since the last background checkpoint's end before another starts.
    static let backgroundStep: Int32 = 500

    private let path: String
    /// Checkpoints run here, one at a time; the connection is used only here.
    private let queue = DispatchQueue(label: "jobq.wal-checkpoint", qos: .utility)
    private nonisolated(unsafe) var connection: OpaquePointer?
    /// Whether a checkpoint is queued or running, how far into the WAL the last one copied, how
    /// many ran, and whether ``close()`` was called: behind a lock held only for a moment, since
    /// the writer's commits take it (never during a checkpoint).
    private let flags = Mutex((scheduled: false, copiedUpTo: Int32(0), runs: 0, closed: false))

    /// Background checkpoints run so far.
    var backgroundCheckpoints: Int { flags.withLock { $0.runs } }

    init(path: String) {
        self.path = path
    }

    /// Makes `connection` report its commits' WAL sizes here. The connection holds no reference:
    /// whoever installs the hook keeps the checkpointer alive as long as the connection (the
    /// store's GRDB configuration does). After ``close()`` reports start nothing.
    func install(on connection: OpaquePointer) {
        sqlite3_wal_hook(
            connection,
            { context, connection, _, pages in
                guard let context else { return SQLITE_OK }
                let checkpointer = Unmanaged<WALCheckpointer>.fromOpaque(context).takeUnretainedValue()
                if pages >= WALCheckpointer.inlineThreshold {
                    // Behind: checkpoint here, as SQLite's own hook does (the write lock is released).
                    sqlite3_wal_checkpoint_v2(connection, nil, SQLITE_CHECKPOINT_PASSIVE, nil, nil)
                } else if pages >= WALCheckpointer.backgroundThreshold {
                    checkpointer.checkpointSoon(walPages: pages)
                }
                return SQLITE_OK
            }, Unmanaged.passUnretained(self).toOpaque())
    }

    private func checkpointSoon(walPages: Int32) {
        let start = flags.withLock { flags in
            if walPages < flags.copiedUpTo { flags.copiedUpTo = 0 }  // the WAL started over
            guard !flags.scheduled, !flags.closed, walPages >= flags.copiedUpTo + Self.backgroundStep else {
                return false
            }
            flags.scheduled = true
            return true
        }
        guard start else { return }
        queue.async { [self] in
            defer { flags.withLock { $0.scheduled = false } }
            guard !flags.withLock({ $0.closed }) else { return }
            if connection == nil {
                var opened: OpaquePointer?
                // A first read makes the connection see the file in WAL mode; until then a
                // checkpoint on it does nothing.
                guard sqlite3_open_v2(path, &opened, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nil) == SQLITE_OK,
                    sqlite3_exec(opened, "SELECT count(*) FROM sqlite_master", nil, nil, nil) == SQLITE_OK
                else {
                    sqlite3_close_v2(opened)
                    return
                }
                connection = opened
            }
            // Passive: copies what no reader still needs, takes no write lock, never waits. A
            // checkpoint running in another process makes this one return busy, which is fine:
            // that one does the work.
            var walFrames: Int32 = 0
            var copied: Int32 = 0
            let result = sqlite3_wal_checkpoint_v2(connection, nil, SQLITE_CHECKPOINT_PASSIVE, &walFrames, &copied)
            flags.withLock { flags in
                flags.runs += 1
                if result == SQLITE_OK { flags.copiedUpTo = max(copied, 0) }
            }
        }
    }

    /// Stops checkpointing and closes the connection, after a checkpoint under way ends.
    func close() {
        flags.withLock { $0.closed = true }
        queue.sync {
            sqlite3_close_v2(connection)
            connection = nil
        }
    }
}
