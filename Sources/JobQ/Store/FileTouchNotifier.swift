import Dispatch
import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Calls `onTouch` on `queue` soon after the operating system reports that one file's times
/// were set (a writer announcing a commit, ``SQLiteStore/announceCommit()``): an inotify watch on
/// the file's directory on Linux, kqueue on macOS. Nothing runs while the file is left alone, so
/// an idle process spends no CPU on it.
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
        private nonisolated(unsafe) let source: any DispatchSourceRead
        private let queue: DispatchQueue
        /// Whether the source is suspended by ``pause(for:)``, and whether it was cancelled; the
        /// source is suspended and resumed under this lock, so the two stay balanced.
        private let suspension = Mutex((paused: false, cancelled: false))

        init?(path: String, queue: DispatchQueue, onTouch: @escaping @Sendable () -> Void) {
            self.queue = queue
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
            source = DispatchSource.makeReadSource(fileDescriptor: descriptor, queue: queue)
            source.setEventHandler {
                if Self.drainEvents(descriptor, mentioning: fileName) { onTouch() }
            }
            source.setCancelHandler { close(descriptor) }
            source.resume()
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
            let paused = suspension.withLock { state in
                guard !state.paused, !state.cancelled else { return false }
                state.paused = true
                source.suspend()
                return true
            }
            guard paused else { return }
            queue.asyncAfter(deadline: .now() + .nanoseconds(Int(duration.inSeconds * 1e9))) { [weak self] in
                self?.suspension.withLock { state in
                    guard state.paused else { return }
                    state.paused = false
                    self?.source.resume()
                }
            }
        }

        func cancel() {
            suspension.withLock { state in
                guard !state.cancelled else { return }
                state.cancelled = true
                source.cancel()
                // A suspended source must be resumed to be cancelled and released.
                if state.paused {
                    state.paused = false
                    source.resume()
                }
            }
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
