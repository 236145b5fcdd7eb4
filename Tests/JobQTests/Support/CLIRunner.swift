import Foundation
import Testing

/// Runs the built `jobq` binary as a process, as a user would.
enum CLI {
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

    /// Runs `jobq ARGS...` with `--db` pointing at `db` and waits for it.
    ///
    /// Output goes to temporary files rather than pipes: Foundation's pipe reads can trap on
    /// EINTR when a child exits, and a file never fills up.
    @discardableResult
    static func run(_ arguments: [String], db: String?, environment: [String: String] = [:]) throws -> Result {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("jobq-cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let outPath = scratch.appendingPathComponent("stdout").path
        let errPath = scratch.appendingPathComponent("stderr").path
        let process = try start(arguments, db: db, environment: environment, stdoutPath: outPath, stderrPath: errPath)
        process.waitUntilExit()
        return Result(
            status: process.terminationStatus,
            stdout: (try? String(contentsOfFile: outPath, encoding: .utf8)) ?? "",
            stderr: (try? String(contentsOfFile: errPath, encoding: .utf8)) ?? "")
    }

    /// Starts `jobq ARGS...` without waiting, its output going to the given files.
    static func start(
        _ arguments: [String], db: String?, environment: [String: String] = [:], stdoutPath: String, stderrPath: String
    ) throws -> Process {
        let process = Process()
        process.executableURL = binary
        process.arguments = (db.map { ["--db", $0] } ?? []) + arguments
        var env = ProcessInfo.processInfo.environment
        env["JOBQ_DB"] = nil
        for (key, value) in environment { env[key] = value }
        process.environment = env
        _ = FileManager.default.createFile(atPath: stdoutPath, contents: nil)
        _ = FileManager.default.createFile(atPath: stderrPath, contents: nil)
        process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: stdoutPath))
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: stderrPath))
        process.standardInput = FileHandle.nullDevice
        try process.run()
        return process
    }

    /// Starts a long-running `jobq` with stdout and stderr both in `logPath`.
    static func startDetached(_ arguments: [String], db: String, logPath: String) throws -> Process {
        try start(arguments, db: db, stdoutPath: logPath + ".out", stderrPath: logPath)
    }
}
