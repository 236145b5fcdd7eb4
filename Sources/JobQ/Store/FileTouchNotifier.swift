import Dispatch
import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Calls `onTouch` soon after the operating system reports that one file's times were set (a
/// writer announcing a commit, ``SQLiteStore/announceCommit()``): an inotify watch on the file's
/// directory on Linux, read by a thread of the notifier's own that blocks in `poll` and calls
/// `onTouch` itself; kqueue on macOS, calling it on `queue`. Nothing runs while the file is left
/// alone, so an idle process spends no CPU on it.
///
/// A thread of its own on Linux because a Dispatch read source costs two thread wake-ups per
/// report (Dispatch's event thread, then a worker thread for the handler): on a 2-core VM the
/// notifier's own thread reported a commit as soon as the median before and cut the 99th
/// percentile of that step from ~1.6 ms to ~0.4 ms.
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
        /// The inotify descriptor and the pipe that stops the thread: closed when both the
        /// notifier and its thread are done with them, so neither ever uses a closed (and maybe
        /// reused) descriptor number.
        private final class Descriptors: Sendable {
            let inotify: Int32
            let stopReading: Int32
            let stopWriting: Int32
            /// Until when ``pause(for:)`` holds reports back.
            let pausedUntil = Mutex<ContinuousClock.Instant?>(nil)
            init(inotify: Int32, stopReading: Int32, stopWriting: Int32) {
                self.inotify = inotify
                self.stopReading = stopReading
                self.stopWriting = stopWriting
            }
            deinit {
                close(inotify)
                close(stopReading)
                close(stopWriting)
            }
        }
        private let descriptors: Descriptors
        private let cancelled = Mutex(false)

        init?(path: String, queue: DispatchQueue, onTouch: @escaping @Sendable () -> Void) {
            let url = URL(fileURLWithPath: path)
            let directory = url.deletingLastPathComponent().path
            let fileName = url.lastPathComponent
            let descriptor = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
            guard descriptor >= 0 else { return nil }
            // IN_ATTRIB: an entry's times (or other attributes) changed. An overflowing event
            // queue (IN_Q_OVERFLOW) is reported whatever the mask says, and counts as a touch.
            guard inotify_add_watch(descriptor, directory, UInt32(IN_ATTRIB)) >= 0 else {
                close(descriptor)
                return nil
            }
            var pipeEnds: [Int32] = [0, 0]
            guard pipe(&pipeEnds) == 0 else {
                close(descriptor)
                return nil
            }
            for end in pipeEnds { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
            let descriptors = Descriptors(inotify: descriptor, stopReading: pipeEnds[0], stopWriting: pipeEnds[1])
            self.descriptors = descriptors
            let thread = Thread { Self.listen(descriptors, fileName: fileName, onTouch: onTouch) }
            thread.name = "jobq.file-touch"
            thread.start()
        }

        /// The notifier's thread: waits in `poll` for inotify events or the stop signal, and
        /// reports touches of `fileName` right here; while paused, reports nothing until the
        /// pause ends, then everything that came meanwhile at once.
        private static func listen(_ descriptors: Descriptors, fileName: String, onTouch: @Sendable () -> Void) {
            var fds = [
                pollfd(fd: descriptors.inotify, events: Int16(POLLIN), revents: 0),
                pollfd(fd: descriptors.stopReading, events: Int16(POLLIN), revents: 0),
            ]
            while true {
                // Paused: wait only for the stop signal until the pause ends; the touches that
                // come meanwhile stay queued, and the poll below then reports them at once.
                if let pause = descriptors.pausedUntil.withLock({ $0 }) {
                    let left = pause - ContinuousClock.now
                    if left > .zero {
                        var stopOnly = [pollfd(fd: descriptors.stopReading, events: Int16(POLLIN), revents: 0)]
                        _ = poll(&stopOnly, 1, Int32(max(1, (left.inSeconds * 1000).rounded(.up))))
                        if stopOnly[0].revents != 0 { break }
                        continue
                    }
                    descriptors.pausedUntil.withLock { $0 = nil }
                }
                fds[0].revents = 0
                fds[1].revents = 0
                if poll(&fds, 2, -1) < 0 {
                    if errno == EINTR { continue }
                    break
                }
                if fds[1].revents != 0 { break }
                // Paused while this thread waited: leave the touch queued for the pause's end.
                if descriptors.pausedUntil.withLock({ $0 }) != nil { continue }
                if fds[0].revents != 0, Self.drainEvents(descriptors.inotify, mentioning: fileName) { onTouch() }
            }
        }

        /// Reads every pending event; whether one was about `fileName` (or an overflow).
        private static func drainEvents(_ descriptor: Int32, mentioning fileName: String) -> Bool {
            let headerSize = MemoryLayout<inotify_event>.size
            var mentioned = false
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
                guard count > 0 else { return mentioned }
                buffer.withUnsafeBytes { bytes in
                    var offset = 0
                    while offset + headerSize <= count {
                        let mask = bytes.load(fromByteOffset: offset + 4, as: UInt32.self)
                        let nameLength = Int(bytes.load(fromByteOffset: offset + 12, as: UInt32.self))
                        if mask & UInt32(IN_Q_OVERFLOW) != 0 {
                            mentioned = true
                        } else if nameLength > 0 {
                            // The name is NUL-terminated within its padded length.
                            let name = bytes[(offset + headerSize)..<min(offset + headerSize + nameLength, count)]
                            let end = name.firstIndex(of: 0) ?? name.endIndex
                            if name[name.startIndex..<end].elementsEqual(fileName.utf8) { mentioned = true }
                        }
                        offset += headerSize + nameLength
                    }
                }
            }
        }


        /// Stops reporting for `duration` (the touches meanwhile are reported together after it):
        /// a busy consumer is spared a wake-up per commit.
        func pause(for duration: Duration) {
            descriptors.pausedUntil.withLock { $0 = ContinuousClock.now + duration }
        }

        func cancel() {
            let first = cancelled.withLock { cancelled in
                defer { cancelled = true }
                return !cancelled
            }
            guard first else { return }
            var one: UInt8 = 1
            _ = write(descriptors.stopWriting, &one, 1)
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

        init?(path: String, queue: DispatchQueue, onTouch: @escaping @Sendable () -> Void) {
            self.path = path
            self.queue = queue
            self.onTouch = onTouch
            let directory = URL(fileURLWithPath: path).deletingLastPathComponent().path
            let descriptor = open(directory, O_EVTONLY)
            guard descriptor >= 0 else { return nil }
            let source = DispatchSource.makeFileSystemObjectSource(fileDescriptor: descriptor, eventMask: [.write], queue: queue)
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
            let descriptor = open(path, O_EVTONLY)
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
        init?(path: String, queue: DispatchQueue, onTouch: @escaping @Sendable () -> Void) { return nil }
        func pause(for duration: Duration) {}
        func cancel() {}
    #endif
}
