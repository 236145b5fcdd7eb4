import Foundation
import GRDB
import Synchronization
import Testing

@testable import JobQCore
@testable import JobQSQL
@testable import JobQSQLite

/// DataMigrationTests on the SQLite store only (a file, a restart, a second connection, SQLite's own locks);
/// the tests every store passes are in StoreConformance/.
extension DataMigrationTests {
    @Test func killedMidStepResumesAtThatStepAndFinishes() async throws {
        let store = try TemporaryStore()
        let log = store.directory.appendingPathComponent("steps.log").path
        let helper = CLI.binary.deletingLastPathComponent().appendingPathComponent("jobq-test-helper")
        func start(_ extra: [String], target: Int) throws -> Child {
            try Child(
                executable: helper, arguments: ["--db", store.path, "--log", log] + extra,
                environment: ["HELPER_TARGET": String(target)],
                stdoutPath: store.directory.appendingPathComponent("helper.out").path,
                stderrPath: store.directory.appendingPathComponent("helper.err").path)
        }
        func lines() -> [String] {
            ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
                .filter { !$0.hasPrefix("run ") && $0 != "exit" }
        }
        let install = try start([], target: 1)
        await install.wait()
        #expect(install.terminationStatus == 0)
        #expect(lines() == ["init 1"])

        let doomed = try start(["--hang-at", "3"], target: 5)
        let deadline = Date().addingTimeInterval(20)
        while !lines().contains("start 3"), Date() < deadline { try await pause(0.05) }
        try #require(lines().contains("start 3"), "step 3 never started: \(lines())")
        kill(doomed.processIdentifier, SIGKILL)
        await doomed.wait()
        #expect(try JobQueue.schemaStatus(path: store.path).dataMigrators.first?.version == 2)

        let restarted = try start([], target: 5)
        await restarted.wait()
        #expect(restarted.terminationStatus == 0)
        #expect(
            lines() == [
                "init 1", "start 2", "done 2", "start 3", "start 3", "done 3", "start 4", "done 4", "start 5", "done 5"
            ])
        let status = try JobQueue.schemaStatus(path: store.path)
        #expect(status.dataMigrators.map(\.version) == [5])
        #expect(status.dataMigrators.map(\.targetVersion) == [5])
    }
}
