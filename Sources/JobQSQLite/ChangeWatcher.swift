import Dispatch
import Foundation
import JobQCore
import JobQSQL
import Synchronization

/// Notices commits to a store's file by other connections (other processes, or another
/// ``JobQueue`` on the same file): at once where the operating system reports the writers'
/// announcements (``FileTouchNotifier``, ``SQLiteStore/announceCommit()``), else by polling.
/// This store's own commits are not reported: its wake handlers and commit observers see them
/// already.
///
/// Whether an announcement was another connection's commit is told by `PRAGMA data_version` on
/// the store's writer connection (``SQLiteStore/othersCommitVersion()``), which moves when
/// another connection commits and never for the connection's own commits; reading it touches no
/// table. A commit pokes the caller, which then looks for what it wants with a read of its own.
/// Commits nobody was told of (a claim, a lease renewal; or a writer that does not announce,
/// such as an older jobq) are seen by the poll, or with the next announced one.
///
/// A watch for a worker pool (`alone`) gets a notifier thread of its own, and reports on it or
/// on its own poll queue, so that the pool may claim and start a job right in the report
/// (``reportsOnItsOwnThread``). Where the OS will not give it a notifier of its own, it polls.
struct ChangeWatcher: OtherCommitsWatch {
    let path: String
    private let store: SQLiteStore
    let alone: Bool

    init?(store: SQLiteStore, alone: Bool = false) {
        guard let path = store.path else { return nil }
        self.path = path
        self.store = store
        self.alone = alone
    }

    var reportsOnItsOwnThread: Bool { alone }

    func version() -> Int? { store.othersCommitVersion() }

    /// Calls `onCommit` after each commit by another connection, until the task is cancelled.
    ///
    /// With OS notifications, `pollInterval` is only a safety net and is stretched to at least
    /// 100ms; without them, it is how late a commit can be noticed. While `isBusy` says so,
    /// commits are reported at most once per `pollInterval` (at least 1ms): a pool with work at
    /// hand needs no wake-up per commit, many of which are its own.
    func run(
        pollInterval: Duration, isBusy: @escaping @Sendable () -> Bool, onCommit: @escaping @Sendable () -> Void
    ) async {
        let watch = CommitWatch(watcher: self, pollInterval: pollInterval, isBusy: isBusy, onCommit: onCommit)
        await withTaskCancellationHandler {
            await watch.waitUntilStopped()
        } onCancel: {
            watch.stop()
        }
    }
}

/// One running watch: the notifier's reports (on its thread, or on `queue` where the notifier
/// uses Dispatch) and the fallback poll (on `queue`); the last version seen is behind a lock, so
/// a commit seen by both is reported once.
private final class CommitWatch: Sendable {
    private let watcher: ChangeWatcher
    private let onCommit: @Sendable () -> Void
    private let isBusy: @Sendable () -> Bool
    private let busyPause: Duration
    private let queue = DispatchQueue(label: "jobq.change-watcher")
    private nonisolated(unsafe) let poll: any DispatchSourceTimer
    private let notifier: FileTouchNotifier?

    private struct State {
        var lastVersion: Int?
        var stopped = false
        var waiter: CheckedContinuation<Void, Never>?
    }
    private let state = Mutex(State())

    init(
        watcher: ChangeWatcher, pollInterval: Duration, isBusy: @escaping @Sendable () -> Bool,
        onCommit: @escaping @Sendable () -> Void
    ) {
        self.watcher = watcher
        self.onCommit = onCommit
        self.isBusy = isBusy
        busyPause = max(pollInterval, .milliseconds(1))
        state.withLock { $0.lastVersion = watcher.version() }
        let queue = self.queue
        // The notifier's handler must not own the watch (the watch owns the notifier).
        let box = WeakBox<CommitWatch>()
        notifier = FileTouchNotifier(path: watcher.path + "-wal", queue: queue, alone: watcher.alone) {
            box.value?.check(.reported)
        }
        let interval = notifier == nil ? pollInterval : max(pollInterval, .milliseconds(100))
        poll = DispatchSource.makeTimerSource(queue: queue)
        let nanoseconds = Int(min(interval.inSeconds * 1e9, 1e12))
        poll.schedule(
            deadline: .now() + .nanoseconds(nanoseconds), repeating: .nanoseconds(nanoseconds),
            leeway: .nanoseconds(nanoseconds / 10))
        poll.setEventHandler { box.value?.check(.poll) }
        box.value = self
        poll.resume()
    }

    private enum Reason {
        /// The OS reported an announcement.
        case reported
        /// The fallback poll.
        case poll
    }

    /// On the notifier's thread or `queue`: reports a commit if data_version moved.
    private func check(_ reason: Reason) {
        if case .reported = reason, isBusy() {
            // Looked at again when the pause ends (its touches are reported then) or by the poll.
            notifier?.pause(for: busyPause)
            return
        }
        let current = watcher.version()
        let moved = state.withLock { state -> Bool in
            guard !state.stopped, let current, current != state.lastVersion else { return false }
            state.lastVersion = current
            return true
        }
        if moved {
            onCommit()
        }
    }

    func waitUntilStopped() async {
        await withCheckedContinuation { continuation in
            let stopped = state.withLock { state in
                if !state.stopped { state.waiter = continuation }
                return state.stopped
            }
            if stopped { continuation.resume() }
        }
    }

    func stop() {
        let waiter = state.withLock { state in
            state.stopped = true
            defer { state.waiter = nil }
            return state.waiter
        }
        notifier?.cancel()
        poll.cancel()
        waiter?.resume()
    }

    deinit {
        notifier?.cancel()
        poll.cancel()
    }
}

/// A weak reference that can be handed to a `@Sendable` closure before its target exists.
private final class WeakBox<Value: AnyObject & Sendable>: Sendable {
    private let reference = Mutex<WeakReference>(WeakReference())
    private struct WeakReference { weak var value: Value? }
    var value: Value? {
        get { reference.withLock { $0.value } }
        set { reference.withLock { $0.value = newValue } }
    }
}
