import Foundation
import Synchronization

/// A diagnostic for timing failures under load (with `JOBQ_TEST_STALL_DIR=DIR`): a thread of its
/// own checks every 250 ms that a task on Swift's concurrency pool and a block on Dispatch's
/// global queue each ran within 2 s; when one did not, it writes every thread's stack (`gdb`)
/// to DIR/stall-PID-N.txt, at most once per 20 s. It told that a whole suite's timeouts were not
/// a stalled pool (the only stall was the first seconds' migrations) but a headless Chromium
/// beside it, now run alone.
enum StallWatch {
    static let started: Void = {
        guard let dir = ProcessInfo.processInfo.environment["JOBQ_TEST_STALL_DIR"] else { return }
        let lastTask = Stamp()
        let lastDispatch = Stamp()
        Thread.detachNewThread {
            var lastDump = ContinuousClock.now - .seconds(60)
            var n = 0
            while true {
                usleep(250_000)
                Task.detached { lastTask.set() }
                DispatchQueue.global().async { lastDispatch.set() }
                let now = ContinuousClock.now
                let taskLate = now - lastTask.get()
                let dispatchLate = now - lastDispatch.get()
                if taskLate > .seconds(2) || dispatchLate > .seconds(2), now - lastDump > .seconds(20) {
                    lastDump = now
                    n += 1
                    let file = "\(dir)/stall-\(getpid())-\(n).txt"
                    let header = "task late \(taskLate), dispatch late \(dispatchLate) at \(Date())\n"
                    _ = FileManager.default.createFile(atPath: file, contents: Data(header.utf8))
                    let gdb = Process()
                    gdb.executableURL = URL(fileURLWithPath: "/usr/bin/gdb")
                    gdb.arguments = ["-p", "\(getpid())", "-batch", "-ex", "thread apply all bt 25"]
                    let handle = FileHandle(forWritingAtPath: file)!
                    handle.seekToEndOfFile()
                    gdb.standardOutput = handle
                    gdb.standardError = FileHandle.nullDevice
                    try? gdb.run()
                    gdb.waitUntilExit()
                }
            }
        }
    }()
}

private final class Stamp: Sendable {
    private let value = Mutex(ContinuousClock.now)
    func set() { value.withLock { $0 = .now } }
    func get() -> ContinuousClock.Instant { value.withLock { $0 } }
}
