// A program the tests run as a process: it runs a data migrator in the background as jobs, so a
// test can kill it with SIGKILL in the middle of a step and check that a restart resumes there.
//
// Usage: jobq-test-helper --db PATH --log PATH [--hang-at STEP]
// HELPER_TARGET sets the migrator's target version (default 5).
//
// It is also one of several processes racing on one store (see Races.swift):
//   jobq-test-helper enqueue-unique|emit|schedule-race|crash-worker --db PATH [options]
//
// And a worker that stops itself (SIGSTOP) inside a write transaction on a PostgreSQL store:
//   jobq-test-helper stop-in-write --db postgres://...
//
// And an application that enqueues in its own transaction and waits to be killed before it
// commits: jobq-test-helper enqueue-in-app-transaction --db PATH|postgres://...

import Foundation
import JobQ
import Logging

func argument(_ name: String) -> String? {
    let arguments = CommandLine.arguments
    guard let index = arguments.firstIndex(of: name), index + 1 < arguments.count else { return nil }
    return arguments[index + 1]
}

/// Appends a line to the log (O_APPEND, so lines from several runs never interleave).
func log(_ line: String) {
    let fd = open(argument("--log") ?? "/dev/null", O_WRONLY | O_APPEND | O_CREAT, 0o600)
    _ = (line + "\n").withCString { write(fd, $0, strlen($0)) }
    close(fd)
}

struct Chain: DataMigrator {
    static let name = "chain"
    static var targetVersion: Int { Int(ProcessInfo.processInfo.environment["HELPER_TARGET"] ?? "5") ?? 5 }
    let hangAt: Int?

    func initialize(_ context: DataMigrationContext) async throws {
        log("init \(context.version)")
    }

    func migrate(to version: Int, context: DataMigrationContext) async throws {
        log("start \(version)")
        if version == hangAt { try await Task.sleep(for: .seconds(600)) }
        log("done \(version)")
    }
}

if let mode = CommandLine.arguments.dropFirst().first, !mode.hasPrefix("-") {
    guard let db = argument("--db") else {
        FileHandle.standardError.write(Data("usage: jobq-test-helper \(mode) --db PATH ...\n".utf8))
        exit(2)
    }
    switch mode {
    case "enqueue-unique": try await Race.enqueueUnique(db: db)
    case "emit": try await Race.emit(db: db)
    case "schedule-race": try await Race.scheduleRace(db: db)
    case "crash-worker": try await Race.crashWorker(db: db)
    case "stop-in-write": try await StopInWrite.run(db: db)
    case "enqueue-in-app-transaction": try await AppTransaction.enqueueAndHang(db: db)
    default:
        FileHandle.standardError.write(
            Data(
                "unknown mode '\(mode)'; modes: enqueue-unique, emit, schedule-race, crash-worker, stop-in-write, enqueue-in-app-transaction\n"
                    .utf8
            ))
        exit(2)
    }
    exit(0)
}

guard let db = argument("--db"), argument("--log") != nil else {
    FileHandle.standardError.write(Data("usage: jobq-test-helper --db PATH --log PATH [--hang-at STEP]\n".utf8))
    exit(2)
}
let hangAt = argument("--hang-at").flatMap(Int.init)
let queue = try JobQueue(path: db)
let report = try await queue.runDataMigration(Chain(hangAt: hangAt), waitUntilDone: false)
log("run from \(report.fromVersion.map(String.init) ?? "none") job \(report.jobID.map(String.init) ?? "none")")
var options = WorkerPool.Options()
options.lease = .seconds(1)
options.pollInterval = .milliseconds(20)
options.stopWhen = .allJobsFinished
let pool = WorkerPool(queue: queue, executors: [], migrators: [Chain(hangAt: hangAt)], options: options)
try await pool.run()
log("exit")
