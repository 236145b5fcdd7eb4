import Dispatch
import Foundation
import JobQCore
import JobQSQL
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Calls `onTouch` soon after the operating system reports that one file's times were set (a
/// writer announcing a commit, ``SQLiteStore/announceCommit()``): on Linux an inotify watch on
/// the file's directory, whose thread calls `onTouch` itself (``DirectoryTouchListener``, one
/// per directory for the whole process); on macOS kqueue, calling it on `queue`. Nothing runs
/// while the file is left alone, so an idle process spends no CPU on it.
///
/// A thread that waits in `poll` on Linux, not a Dispatch read source, because the source costs
/// two thread wake-ups per report (Dispatch's event thread, then a worker thread for the
/// handler), which showed in the 99th percentile of pick-up latency (`docs/performance.md`).
///
/// The directory is watched, not the file, because the file comes and goes: SQLite deletes a
/// store's WAL when its last connection closes and creates it again at the next write.
///
/// Not SQLite's own writes to the WAL: they come one per page, before the commit is published
/// in shared memory, so a watcher woken by them would find nothing yet and have to look again;
/// the announcement comes once per commit, after it. The caller still checks what changed
/// (``ChangeWatcher`` reads `PRAGMA data_version`). `nil` when the OS offers no such watch
/// (then the caller polls).
final class FileTouchNotifier: Sendable {
    #if canImport(Glibc)
        private let listener: DirectoryTouchListener
        private let id: UInt64
        private let cancelled = Mutex(false)

        /// `alone`: `onTouch` is called on a thread that calls nobody else's (see
        /// ``DirectoryTouchListener/subscribe(directory:fileName:alone:onTouch:)``).
        init?(path: String, queue: DispatchQueue, alone: Bool = false, onTouch: @escaping @Sendable () -> Void) {
            let url = URL(fileURLWithPath: path)
            guard
                let (listener, id) = DirectoryTouchListener.subscribe(
                    directory: url.deletingLastPathComponent().path, fileName: url.lastPathComponent, alone: alone,
                    onTouch: onTouch)
            else { return nil }
            self.listener = listener
            self.id = id
        }

        /// Stops reporting for `duration` (the touches meanwhile are reported together after it):
        /// a busy consumer is spared a wake-up per commit.
        func pause(for duration: Duration) {
            listener.pause(id, until: ContinuousClock.now + duration)
        }

        func cancel() {
            let first = cancelled.withLock { cancelled in
                defer { cancelled = true }
                return !cancelled
            }
            if first { listener.unsubscribe(id) }
        }

        deinit { cancel() }

    #elseif canImport(Darwin)
        // The directory's vnode reports entries added or removed (the WAL created again); the
        // file's own vnode reports its attribute changes, and is watched again whenever the
        // directory changes. These three are touched only on `queue`, or in deinit, when nothing else can.
        private nonisolated(unsafe) var directorySource: (any DispatchSourceFileSystemObject)?
        private nonisolated(unsafe) var fileSource: (any DispatchSourceFileSystemObject)?
        private nonisolated(unsafe) var cancelled = false
        private let path: String
        private let queue: DispatchQueue
        private let onTouch: @Sendable () -> Void

        /// `onTouch` is always called on `queue`, which is the caller's own.
        init?(path: String, queue: DispatchQueue, alone: Bool = false, onTouch: @escaping @Sendable () -> Void) {
            self.path = path
            self.queue = queue
            self.onTouch = onTouch
            let directory = URL(fileURLWithPath: path).deletingLastPathComponent().path
            let descriptor = open(directory, O_EVTONLY)
            guard descriptor >= 0 else { return nil }
            let source = DispatchSource.makeFileSystemObjectSource(
                fileDescriptor: descriptor, eventMask: [.write], queue: queue)
            source.setCancelHandler { close(descriptor) }
            directorySource = source
            source.setEventHandler { [weak self] in self?.armFileWatch() }
            source.resume()
            queue.async { [weak self] in self?.armFileWatch() }
        }

        /// On `queue`: watches the file as it is now, replacing the previous watch.
        private func armFileWatch() {
            guard !cancelled else { return }
            fileSource?.cancel()
            fileSource = nil
            let descriptor = open(path, O_EVTONLY | O_CLOEXEC)
            guard descriptor >= 0 else { return }
            let source = DispatchSource.makeFileSystemObjectSource(
                fileDescriptor: descriptor, eventMask: [.attrib, .delete, .rename], queue: queue)
            source.setCancelHandler { close(descriptor) }
            source.setEventHandler { [weak self] in
                guard let self, let source = self.fileSource else { return }
                if !source.data.isDisjoint(with: [.delete, .rename]) { self.armFileWatch() }
                self.onTouch()
            }
            fileSource = source
            source.resume()
        }

        /// Not done on macOS: every touch is reported.
        func pause(for duration: Duration) {}

        func cancel() {
            queue.async { [self] in
                cancelled = true
                directorySource?.cancel()
                fileSource?.cancel()
            }
        }

        deinit {
            directorySource?.cancel()
            fileSource?.cancel()
        }
    #else
        init?(path: String, queue: DispatchQueue, alone: Bool = false, onTouch: @escaping @Sendable () -> Void) {
            return nil
        }
        func pause(for duration: Duration) {}
        func cancel() {}
    #endif
}
