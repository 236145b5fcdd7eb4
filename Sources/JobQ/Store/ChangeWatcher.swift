import Dispatch
import Foundation
import Synchronization

/// Notices commits to a store's file by other connections (other processes, or another
/// ``JobQueue`` on the same file): at once where the operating system reports writes to the WAL
/// (``FileWriteNotifier``), else by polling. This store's own commits are not reported: its
/// wake handlers and commit observers see them already.
///
/// Whether a write was such a commit is told by `PRAGMA data_version` on the store's writer
/// connection (``SQLiteStore/othersCommitVersion()``), which moves when another connection
/// commits and never for the connection's own commits; reading it touches no table. A commit
/// pokes the caller, which then looks for what it wants with a read of its own.
struct ChangeWatcher: OtherCommitsWatch {
    let path: String
    private let store: SQLiteStore

    init?(store: SQLiteStore) {
        guard let path = store.path else { return nil }
        self.path = path
        self.store = store
    }

    func version() -> Int? { store.othersCommitVersion() }

    func ownWriteActivity() -> (commits: Int, writing: Bool) { store.ownWriteActivity() }

    /// Calls `onCommit` after each commit by another connection, until the task is cancelled.
    ///
    /// With OS notifications, `pollInterval` is only a safety net and is stretched to at least
    /// 100ms; without them, it is how late a commit can be noticed. While `isBusy` says so,
    /// writes are reported at most once per `pollInterval` (at least 1ms): a pool with work at
    /// hand needs no wake-up per write, most of which are its own.
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

/// One running watch: the notifier's reports, the rechecks after them and the fallback poll,
/// all on one serial queue, so the last version seen needs no other guard.
private final class CommitWatch: Sendable {
    private let watcher: ChangeWatcher
    private let onCommit: @Sendable () -> Void
    private let isBusy: @Sendable () -> Bool
    private let busyPause: Duration
    private let queue = DispatchQueue(label: "jobq.change-watcher")
    private nonisolated(unsafe) let poll: any DispatchSourceTimer
    private let notifier: FileWriteNotifier?

    private struct State {
        var lastVersion: Int?
        /// This process's commit count at the last look (see ``SQLiteStore/ownWriteActivity()``).
        var ownCommits = 0
        /// The chain of rechecks that is current (older ones stop at their next step).
        var chain = 0
        var stopped = false
        var waiter: CheckedContinuation<Void, Never>?
    }
    private let state = Mutex(State())

    /// After a reported write that showed no new commit yet, look again this much later: the
    /// writer publishes the commit in shared memory just after its last WAL write, normally
    /// within microseconds, but a loaded machine can preempt it in between.
    /// The later steps are for a writer descheduled in between on a loaded machine: a test
    /// with its fallback poll 10s apart missed a commit under a full parallel test run with
    /// rechecks up to 8ms only.
    private static let rechecks: [Duration] = [.microseconds(500), .milliseconds(2), .milliseconds(8), .milliseconds(32), .milliseconds(128)]

    init(
        watcher: ChangeWatcher, pollInterval: Duration, isBusy: @escaping @Sendable () -> Bool, onCommit: @escaping @Sendable () -> Void
    ) {
        self.watcher = watcher
        self.onCommit = onCommit
        self.isBusy = isBusy
        busyPause = max(pollInterval, .milliseconds(1))
        state.withLock { $0.lastVersion = watcher.version() }
        let queue = self.queue
        // The notifier's handler must not own the watch (the watch owns the notifier).
        let box = WeakBox<CommitWatch>()
        notifier = FileWriteNotifier(path: watcher.path + "-wal", queue: queue) { box.value?.check(.reported) }
        let interval = notifier == nil ? pollInterval : max(pollInterval, .milliseconds(100))
        poll = DispatchSource.makeTimerSource(queue: queue)
        let nanoseconds = Int(min(interval.inSeconds * 1e9, 1e12))
        poll.schedule(deadline: .now() + .nanoseconds(nanoseconds), repeating: .nanoseconds(nanoseconds), leeway: .nanoseconds(nanoseconds / 10))
        poll.setEventHandler { box.value?.check(.poll) }
        box.value = self
        poll.resume()
    }

    private enum Reason {
        /// The OS reported a write.
        case reported
        /// A look again after a report that showed no commit yet.
        case recheck(step: Int, chain: Int)
        /// The fallback poll.
        case poll
    }

    /// On `queue`: reports a commit if data_version moved.
    private func check(_ reason: Reason) {
        if case .reported = reason, isBusy() {
            // Looked at again when the pause ends (its writes are reported then) or by the poll.
            notifier?.pause(for: busyPause)
            return
        }
        if case .recheck(_, let chain) = reason, state.withLock({ $0.chain != chain }) { return }
        let own = watcher.ownWriteActivity()
        let current = watcher.version()
        let (moved, recheck) = state.withLock { state -> (Bool, (step: Int, chain: Int)?) in
            guard !state.stopped else { return (false, nil) }
            defer { state.ownCommits = own.commits }
            if let current, current != state.lastVersion {
                state.lastVersion = current
                return (true, nil)
            }
            switch reason {
            case .reported where own.writing || own.commits != state.ownCommits:
                // The write was (most likely) this process's own, which data_version never
                // shows: no chain of looks. Another process's commit at the same moment is
                // seen at its next write's report, or by the poll.
                return (false, nil)
            case .reported:
                // The newest report starts its own chain and ends the older one: what the older
                // one waited for is published before the newer write began, or with it.
                state.chain += 1
                return (false, (0, state.chain))
            case .recheck(let step, let chain) where step + 1 < Self.rechecks.count:
                return (false, (step + 1, chain))
            case .recheck, .poll:
                return (false, nil)
            }
        }
        if moved {
            onCommit()
        } else if let recheck {
            let delay = Self.rechecks[recheck.step]
            queue.asyncAfter(deadline: .now() + .nanoseconds(Int(delay.inSeconds * 1e9))) { [weak self] in
                self?.check(.recheck(step: recheck.step, chain: recheck.chain))
            }
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
