import Foundation
import Synchronization
import Testing

@testable import JobQCore
@testable import JobQSQL
@testable import JobQSQLite

/// Runs the built `jobq` binary as a process, as a user would.
///
/// Everything here awaits rather than blocks: Swift Testing runs tests on the cooperative
/// thread pool (two threads on a two-core machine), and a test that blocked one in
/// `waitUntilExit` would starve the worker pools of the tests running beside it.
enum CLI {
    /// The `jobq-bench` binary next to `jobq`.
    static var benchBinary: URL { binary.deletingLastPathComponent().appendingPathComponent("jobq-bench") }

    /// The `jobq` binary next to the test bundle, or `$JOBQ_BINARY`.
    static var binary: URL {
        if let path = ProcessInfo.processInfo.environment["JOBQ_BINARY"] { return URL(fileURLWithPath: path) }
        var directory = Bundle.main.bundleURL
        // On Linux the test runner is <build>/debug/jobqPackageTests.xctest; on macOS it is a
        // bundle inside that folder. Walk up until a `jobq` executable is found.
        for _ in 0..<4 {
            let candidate = directory.appendingPathComponent("jobq")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
            directory = directory.deletingLastPathComponent()
        }
        return Bundle.main.bundleURL.deletingLastPathComponent().appendingPathComponent("jobq")
    }

    struct Result {
        let status: Int32
        let stdout: String
        let stderr: String
    }

    /// Runs `jobq ARGS...` with `--db` pointing at `db` and waits for it. Output goes to
    /// temporary files rather than pipes, which never fill up.
    ///
    /// At most ``RunGate/limit`` of these run at once across the whole test run: Swift Testing
    /// starts every test together, and forty debug `jobq` processes starting at once kept both
    /// cores saturated for fifteen seconds, long enough to starve the in-process worker pools
    /// (and their heartbeats) of the tests beside them.
    @discardableResult
    static func run(_ arguments: [String], db: String?, environment: [String: String] = [:], executable: URL? = nil)
        async throws -> Result
    {
        await RunGate.shared.enter()
        defer { RunGate.shared.leave() }
        let scratch = TestScratch.url("jobq-cli")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let outPath = scratch.appendingPathComponent("stdout").path
        let errPath = scratch.appendingPathComponent("stderr").path
        let child = try start(
            arguments, db: db, environment: environment, stdoutPath: outPath, stderrPath: errPath,
            executable: executable)
        // A run that hangs fails its test instead of holding a slot (and the whole run) forever.
        let watchdog = Task {
            try await Task.sleep(for: .seconds(300))
            Issue.record("jobq \(arguments.joined(separator: " ")) did not exit within 300s; killed it")
            kill(child.processIdentifier, SIGKILL)
        }
        await child.wait()
        watchdog.cancel()
        return Result(
            status: child.terminationStatus,
            stdout: (try? String(contentsOfFile: outPath, encoding: .utf8)) ?? "",
            stderr: (try? String(contentsOfFile: errPath, encoding: .utf8)) ?? "")
    }

    /// Starts `jobq ARGS...` without waiting, its output going to the given files.
    static func start(
        _ arguments: [String], db: String?, environment: [String: String] = [:], stdoutPath: String, stderrPath: String,
        executable: URL? = nil
    ) throws -> Child {
        try Child(
            executable: executable ?? binary, arguments: (db.map { ["--db", $0] } ?? []) + arguments,
            environment: environment,
            stdoutPath: stdoutPath, stderrPath: stderrPath)
    }

    /// Starts a long-running `jobq` with its stderr in `logPath`.
    static func startDetached(_ arguments: [String], db: String, logPath: String) throws -> Child {
        try start(arguments, db: db, stdoutPath: logPath + ".out", stderrPath: logPath)
    }
}

/// A counting semaphore for short `jobq` runs, awaited rather than blocked on.
final class RunGate: Sendable {
    static let limit = 2
    static let shared = RunGate()
    private let state = Mutex<(running: Int, waiters: [CheckedContinuation<Void, Never>])>((0, []))

    func enter() async {
        await withCheckedContinuation { continuation in
            let admitted = state.withLock { state in
                if state.running < Self.limit {
                    state.running += 1
                    return true
                }
                state.waiters.append(continuation)
                return false
            }
            if admitted { continuation.resume() }
        }
    }

    /// Hands the slot straight to the first waiter, if any.
    func leave() {
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            if state.waiters.isEmpty {
                state.running -= 1
                return nil
            }
            return state.waiters.removeFirst()
        }
        next?.resume()
    }
}

/// A child process whose exit can be awaited: the library's own `posix_spawn` wrapper, whose
/// exit is seen by `waitpid` on a thread of its own. Not Foundation's `Process`, which learns of
/// an exit through a socket that a sibling spawned at the same moment, or an orphaned grandchild,
/// can inherit and hold open: its `terminationHandler` then never fires.
final class Child: Sendable {
    private let process: ChildProcess

    init(executable: URL, arguments: [String], environment: [String: String], stdoutPath: String, stderrPath: String)
        throws
    {
        var env = ProcessInfo.processInfo.environment
        env["JOBQ_DB"] = nil
        for (key, value) in environment { env[key] = value }
        process = try ChildProcess(
            executable: executable.path, arguments: arguments, environment: env, directory: nil,
            output: .files(stdout: stdoutPath, stderr: stderrPath))
    }

    /// A test that fails half-way must not leave a worker running for the rest of the run (or
    /// forever): whatever is still running when its `Child` goes away is killed.
    deinit {
        process.signal(SIGKILL)
    }

    enum TerminationReason { case exit, uncaughtSignal }

    var processIdentifier: Int32 { process.pid }
    /// After ``wait()``: the exit code, or the signal's number when a signal ended it.
    var terminationStatus: Int32 {
        if let signal = process.terminatingSignal { return signal }
        return exitCode
    }
    var terminationReason: TerminationReason { process.terminatingSignal == nil ? .exit : .uncaughtSignal }

    private let code = Mutex<Int32>(-1)
    private var exitCode: Int32 { code.withLock { $0 } }

    func wait() async {
        let status = await process.wait()
        code.withLock { $0 = status }
    }
}

/// Sleeps without blocking a thread.
func pause(_ seconds: Double) async throws {
    try await Task.sleep(for: .milliseconds(Int64(seconds * 1000)))
}
