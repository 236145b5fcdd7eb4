import JobQCore
import JobQSQL

#if canImport(Glibc)
    import Foundation
    import Glibc
    import Synchronization

    /// One inotify watch and one thread per directory, shared by every ``FileTouchNotifier`` of
    /// the process on a file in it: the thread blocks in `poll` and calls the subscribers whose
    /// file was touched right there, one after another (no hand-off to another thread, which
    /// would cost a wake-up per report). Shared, so that a process with many watchers (a
    /// dashboard's live streams, each an event feed) holds one thread and one of the user's
    /// inotify instances (128 by default on Linux) per store directory, not one per watcher.
    ///
    /// A worker pool subscribes `alone`: its listener and thread are its own, since it claims
    /// and starts a job right in the report.
    ///
    /// The thread starts with the first subscriber and stops with the last. Subscribers are
    /// called one after another, so each should be quick (``ChangeWatcher``'s check reads
    /// `PRAGMA data_version`, and the pool's a claimable-work read of the store).
    final class DirectoryTouchListener: Sendable {
        /// The listeners of the process, by directory.
        private static let listeners = Mutex<[String: DirectoryTouchListener]>([:])

        private struct Subscriber {
            let fileName: String
            let onTouch: @Sendable () -> Void
            var pausedUntil: ContinuousClock.Instant?
            /// Touched while paused: reported when the pause ends.
            var pending = false
        }
        private struct State {
            var subscribers: [UInt64: Subscriber] = [:]
            var nextID: UInt64 = 0
            /// Set (under the registry's lock) when the last subscriber leaves; nothing writes to
            /// the stop pipe after that, so the thread may close the descriptors as it ends.
            var stopped = false
        }
        private let state = Mutex(State())
        /// Its key among ``listeners``.
        private let directory: String
        private let inotify: Int32
        private let stopReading: Int32
        private let stopWriting: Int32

        private init?(directory: String) {
            let descriptor = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
            guard descriptor >= 0 else { return nil }
            // IN_ATTRIB: an entry's times (or other attributes) changed. An overflowing event
            // queue (IN_Q_OVERFLOW) is reported whatever the mask says, and counts as a touch.
            guard inotify_add_watch(descriptor, directory, UInt32(IN_ATTRIB)) >= 0 else {
                close(descriptor)
                return nil
            }
            guard let pipeEnds = try? Descriptors.pipe() else {
                close(descriptor)
                return nil
            }
            self.directory = directory
            inotify = descriptor
            stopReading = pipeEnds.read
            stopWriting = pipeEnds.write
        }

        /// Calls `onTouch` on the listener's thread whenever `fileName` in `directory` is
        /// touched; returns the listener and the subscription's id for ``pause(_:until:)`` and
        /// ``unsubscribe(_:)``, or nil when the OS offers no watch.
        ///
        /// `alone`: on a listener and thread of the subscriber's own (one more inotify instance),
        /// so that `onTouch` may run as long as it likes: a worker pool claims and starts a job
        /// right there, and must not hold up the reports of the process's other watchers.
        static func subscribe(
            directory: String, fileName: String, alone: Bool = false, onTouch: @escaping @Sendable () -> Void
        ) -> (listener: DirectoryTouchListener, id: UInt64)? {
            listeners.withLock { listeners in
                let listener: DirectoryTouchListener
                if !alone, let existing = listeners[directory] {
                    listener = existing
                } else {
                    guard let created = DirectoryTouchListener(directory: directory) else { return nil }
                    listener = created
                    if !alone { listeners[directory] = created }
                    let thread = Thread { created.listen() }
                    thread.name = "jobq.file-touch"
                    thread.start()
                }
                let id = listener.state.withLock { state in
                    state.nextID += 1
                    state.subscribers[state.nextID] = Subscriber(fileName: fileName, onTouch: onTouch)
                    return state.nextID
                }
                return (listener, id)
            }
        }

        /// Ends a subscription; the last one stops the thread.
        func unsubscribe(_ id: UInt64) {
            Self.listeners.withLock { listeners in
                let stop = state.withLock { state in
                    state.subscribers[id] = nil
                    guard state.subscribers.isEmpty, !state.stopped else { return false }
                    state.stopped = true
                    return true
                }
                guard stop else { return }
                if listeners[directory] === self { listeners[directory] = nil }
                var one: UInt8 = 1
                _ = write(stopWriting, &one, 1)
            }
        }

        /// Holds a subscriber's reports back until `deadline`; what came meanwhile is reported
        /// once then.
        func pause(_ id: UInt64, until deadline: ContinuousClock.Instant) {
            state.withLock { $0.subscribers[id]?.pausedUntil = deadline }
        }

        /// The thread: waits for touches (or the end of a pause that held one back), and calls
        /// the subscribers they are for.
        private func listen() {
            // For `top -H` and perf: on Linux a thread starts with its creator's name, and
            // Foundation's `Thread.name` does not reach the OS.
            Self.nameThisThread("jobq.file-touch")
            var fds = [
                pollfd(fd: inotify, events: Int16(POLLIN), revents: 0),
                pollfd(fd: stopReading, events: Int16(POLLIN), revents: 0)
            ]
            while true {
                let wakeAt = state.withLock { state in
                    state.subscribers.values.filter(\.pending).compactMap(\.pausedUntil).min()
                }
                let timeout =
                    wakeAt.map { Int32(max(0, ((($0 - ContinuousClock.now).inSeconds) * 1000).rounded(.up))) } ?? -1
                fds[0].revents = 0
                fds[1].revents = 0
                if poll(&fds, 2, timeout) < 0 {
                    // Interrupted, or (never seen) out of memory: look again. Only the stop
                    // pipe ends the thread, since only then is nobody left to write to it.
                    if errno != EINTR { usleep(10_000) }
                    continue
                }
                if fds[1].revents != 0 { break }
                let touched = fds[0].revents != 0 ? Self.drainEvents(inotify) : TouchedNames()
                let now = ContinuousClock.now
                let calls = state.withLock { state in
                    var calls: [@Sendable () -> Void] = []
                    for (id, subscriber) in state.subscribers {
                        let due = subscriber.pending && (subscriber.pausedUntil.map { $0 <= now } ?? true)
                        guard due || touched.includes(subscriber.fileName) else { continue }
                        if let until = subscriber.pausedUntil, until > now {
                            state.subscribers[id]?.pending = true
                            continue
                        }
                        state.subscribers[id]?.pausedUntil = nil
                        state.subscribers[id]?.pending = false
                        calls.append(subscriber.onTouch)
                    }
                    return calls
                }
                for call in calls { call() }
            }
            close(inotify)
            close(stopReading)
            close(stopWriting)
        }

        /// Sets the calling thread's name as the OS shows it (at most 15 bytes).
        private static func nameThisThread(_ name: String) {
            let descriptor = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
            guard descriptor >= 0 else { return }
            defer { close(descriptor) }
            let bytes = Array(name.utf8.prefix(15))
            _ = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        }

        /// The names of the entries an inotify read reported, or every name (an overflow).
        private struct TouchedNames {
            var names: Set<String> = []
            var all = false
            func includes(_ name: String) -> Bool { all || names.contains(name) }
        }

        /// Reads every pending event.
        private static func drainEvents(_ descriptor: Int32) -> TouchedNames {
            let headerSize = MemoryLayout<inotify_event>.size
            var touched = TouchedNames()
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
                guard count > 0 else { return touched }
                buffer.withUnsafeBytes { bytes in
                    var offset = 0
                    while offset + headerSize <= count {
                        let mask = bytes.load(fromByteOffset: offset + 4, as: UInt32.self)
                        let nameLength = Int(bytes.load(fromByteOffset: offset + 12, as: UInt32.self))
                        if mask & UInt32(IN_Q_OVERFLOW) != 0 {
                            touched.all = true
                        } else if nameLength > 0 {
                            // The name is NUL-terminated within its padded length.
                            let name = bytes[(offset + headerSize)..<min(offset + headerSize + nameLength, count)]
                            let end = name.firstIndex(of: 0) ?? name.endIndex
                            touched.names.insert(String(decoding: name[name.startIndex..<end], as: UTF8.self))
                        }
                        offset += headerSize + nameLength
                    }
                }
            }
        }
    }
#endif
