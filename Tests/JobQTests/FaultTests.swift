import Foundation
import GRDB
import Testing

@testable import JobQ

/// A store that cannot be used gives a clear error and a non-zero exit, never a crash, and a
/// healthy store is never harmed by a failed command.
@Suite("Faults: unusable stores")
struct FaultTests {
    @Test func readOnlyStoreRefusesWritesClearly() async throws {
        guard getuid() != 0 else {
            // root writes through file permissions; make the file immutable another way: a
            // read-only bind is not available here, so check the library's mapping directly.
            #expect(SQLiteStore.explain(DatabaseError(resultCode: .SQLITE_READONLY, message: "attempt to write a readonly database"), path: "x.sqlite")
                .contains("cannot open x.sqlite for writing"))
            return
        }
        let store = try TemporaryStore()
        try await CLI.run(["enqueue", "sum", "--param", "a=1", "--param", "b=2"], db: store.path)
        try FileManager.default.setAttributes([.posixPermissions: 0o400], ofItemAtPath: store.path)
        let result = try await CLI.run(["enqueue", "sum", "--param", "a=1", "--param", "b=2"], db: store.path)
        #expect(result.status == 1)
        #expect(result.stderr.contains("for writing"))
    }

    @Test func corruptedPageIsReportedNotCrashedOn() async throws {
        let store = try TemporaryStore()
        try await CLI.run(["enqueue", "--file", try Self.jobsFile(store, count: 400)], db: store.path)
        // Close cleanly (checkpoint) so the jobs live in the main file, then scribble over a page
        // in the middle of it.
        _ = try await CLI.run(["status"], db: store.path)
        let handle = try FileHandle(forUpdating: URL(fileURLWithPath: store.path))
        let size = try handle.seekToEnd()
        try handle.seek(toOffset: size / 2)
        handle.write(Data(repeating: 0xA5, count: 8192))
        try handle.close()
        let result = try await CLI.run(["list", "--limit", "1000"], db: store.path)
        #expect(result.status != 0)
        #expect(result.status < 128, "an error exit, not a crash")
        #expect(result.stderr.contains("corrupt") || result.stderr.contains("malformed"), "\(result.stderr)")
    }

    @Test func aFailedCommandLeavesAHealthyStoreAlone() async throws {
        let store = try TemporaryStore()
        try await CLI.run(["enqueue", "sum", "--param", "a=1", "--param", "b=2"], db: store.path)
        let before = try BadInputTests.snapshot(store.path)
        _ = try await CLI.run(["enqueue", "--file", "/nonexistent"], db: store.path)
        _ = try await CLI.run(["cancel", "999"], db: store.path)
        _ = try await CLI.run(["retry", "1"], db: store.path)
        #expect(try BadInputTests.snapshot(store.path) == before)
        let check = try await DatabaseQueue(path: store.path).read { try String.fetchOne($0, sql: "PRAGMA integrity_check") }
        #expect(check == "ok")
    }

    static func jobsFile(_ store: TemporaryStore, count: Int) throws -> String {
        let path = store.directory.appendingPathComponent("jobs.jsonl").path
        let line = #"{"executor": "echo", "payload": {"padding": "\#(String(repeating: "x", count: 200))"}}"#
        try Array(repeating: line, count: count).joined(separator: "\n").write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }
}
