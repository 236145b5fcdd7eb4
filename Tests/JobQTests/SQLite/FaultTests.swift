import Foundation
import GRDB
import Testing

@testable import JobQCore
@testable import JobQSQL
@testable import JobQSQLite

/// A store that cannot be used gives a clear error and a non-zero exit, never a crash, and a
/// healthy store is never harmed by a failed command.
@Suite("Faults: unusable stores")
struct FaultTests {
    @Test func readOnlyStoreRefusesWritesClearly() async throws {
        guard getuid() != 0 else {
            // root writes through file permissions; make the file immutable another way: a
            // read-only bind is not available here, so check the library's mapping directly.
            #expect(
                SQLiteStore.explain(
                    DatabaseError(resultCode: .SQLITE_READONLY, message: "attempt to write a readonly database"),
                    path: "x.sqlite"
                )
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
        // Checkpoint so the jobs live in the main file (not in WAL frames that would mask the
        // damage), then scribble over every page after the first, which holds the schema.
        try await DatabaseQueue(path: store.path).writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)")
        }
        let handle = try FileHandle(forUpdating: URL(fileURLWithPath: store.path))
        let size = try handle.seekToEnd()
        try handle.seek(toOffset: 4096)
        handle.write(Data(repeating: 0xA5, count: Int(size) - 4096))
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
        let check = try await DatabaseQueue(path: store.path).read {
            try String.fetchOne($0, sql: "PRAGMA integrity_check")
        }
        #expect(check == "ok")
    }

    static func jobsFile(_ store: TemporaryStore, count: Int) throws -> String {
        let path = store.directory.appendingPathComponent("jobs.jsonl").path
        let line = #"{"executor": "echo", "payload": {"padding": "\#(String(repeating: "x", count: 200))"}}"#
        try Array(repeating: line, count: count).joined(separator: "\n").write(
            toFile: path, atomically: true, encoding: .utf8)
        return path
    }
}

/// A full disk, on a small tmpfs (needs root, as on the development and CI machines).
@Suite("Faults: a full disk", .serialized)
struct DiskFullTests {
    static let mountPoint = FileManager.default.temporaryDirectory.appendingPathComponent("jobq-small-fs").path

    static func mount() -> Bool {
        try? FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: true)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/mount")
        process.arguments = ["-t", "tmpfs", "-o", "size=1m", "tmpfs", mountPoint]
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return false }
        process.waitUntilExit()
        return process.terminationStatus == 0
    }

    /// Whether this machine lets the tests mount a tmpfs (root with CAP_SYS_ADMIN, as on the
    /// development and CI machines); elsewhere these tests are skipped, not failed.
    static let tmpfsAvailable: Bool = {
        guard getuid() == 0, mount() else { return false }
        unmount()
        return true
    }()

    static func unmount() {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/umount")
        process.arguments = [mountPoint]
        try? process.run()
        process.waitUntilExit()
    }

    @Test(.enabled(if: DiskFullTests.tmpfsAvailable, "mounting a tmpfs needs root and CAP_SYS_ADMIN"))
    func aReadOnlyFilesystemIsAClearErrorAndChangesNothing() async throws {
        try #require(Self.mount(), "could not mount a tmpfs at \(Self.mountPoint)")
        defer { Self.unmount() }
        let db = Self.mountPoint + "/jobq.sqlite"
        #expect(try await CLI.run(["enqueue", "sum", "--param", "a=1", "--param", "b=2"], db: db).status == 0)
        _ = try await CLI.run(["status"], db: db)
        let remount = Process()
        remount.executableURL = URL(fileURLWithPath: "/bin/mount")
        remount.arguments = ["-o", "remount,ro", Self.mountPoint]
        try remount.run()
        remount.waitUntilExit()
        try #require(remount.terminationStatus == 0)
        let result = try await CLI.run(["enqueue", "sum", "--param", "a=1", "--param", "b=2"], db: db)
        #expect(result.status == 1)
        #expect(
            result.stderr.contains("for writing") || result.stderr.contains("read-only")
                || result.stderr.contains("readonly"), "\(result.stderr)")
        #expect(result.status < 128, "an error exit, not a crash")
    }

    @Test(.enabled(if: DiskFullTests.tmpfsAvailable, "mounting a tmpfs needs root and CAP_SYS_ADMIN"))
    func aFullDiskIsAClearErrorAndKeepsWhatWasAcknowledged() async throws {
        try #require(Self.mount(), "could not mount a tmpfs at \(Self.mountPoint)")
        defer { Self.unmount() }
        let db = Self.mountPoint + "/jobq.sqlite"
        let payload = "\"" + String(repeating: "x", count: 20_000) + "\""
        var acknowledged = 0
        var failure: CLI.Result?
        for _ in 0..<100 {
            let result = try await CLI.run(["enqueue", "echo", "--payload", payload], db: db)
            if result.status != 0 {
                failure = result
                break
            }
            acknowledged += 1
        }
        let full = try #require(failure, "the 1 MiB disk never filled up")
        #expect(full.status == 1)
        #expect(full.stderr.contains("is full"), "\(full.stderr)")
        #expect(acknowledged > 0)
        let (check, count) = try await DatabaseQueue(path: db).read { db in
            (
                try String.fetchOne(db, sql: "PRAGMA integrity_check"),
                try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM jobq_jobs")
            )
        }
        #expect(check == "ok")
        #expect(count == acknowledged, "every acknowledged job is there, and nothing else")
    }
}

/// SQLite's refusals of the data are permanent, as PostgreSQL's are (the one job they concern
/// is ended or skipped, never retried as it is); a lock is transient.
@Suite("SQLite errors by kind")
struct SQLiteErrorKindTests {
    @Test func dataRefusalsArePermanentAndLocksTransient() throws {
        let store = try TemporaryStore()
        _ = try store.open()
        let writer = try DatabaseQueue(path: store.path)
        do {
            try writer.write { try $0.execute(sql: "INSERT INTO jobq_queues (name) VALUES (NULL)") }
            Issue.record("a NULL name was stored")
        } catch {
            let mapped = SQLiteStore.mapped(error, path: store.path)
            #expect(StoreErrorKind(of: mapped) == .permanent, "\(mapped)")
        }
        let busy = DatabaseError(resultCode: .SQLITE_BUSY, message: "database is locked")
        #expect(StoreErrorKind(of: SQLiteStore.mapped(busy, path: store.path)) == .transient)
    }
}
