import Foundation
import JobQ
import JobQPostgres
import Testing

@testable import JobQCore

/// `jobq pause --executor` with two `jobq work` processes running: both stop taking that
/// executor's jobs at their next claim, in every queue, while the other executor's jobs run on.
@Suite("Pausing an executor across processes")
struct PauseProcessTests {
    @Test(arguments: TestStore.all) func twoWorkersStopClaimingAPausedExecutorAndResumeIt(store: TestStore)
        async throws
    {
        let db = try await store.location()
        let scratch = TestScratch.url("pause-process")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let paused = try await CLI.run(["pause", "--executor", "echo"], db: db)
        #expect(paused.status == 0 && paused.stdout == "executor echo paused in every queue\n", "\(paused.stderr)")

        let workers = try (0..<2).map { index in
            try CLI.startDetached(
                ["work", "--queue", "a", "--queue", "b", "--no-scheduler", "--no-cleaner"], db: db,
                logPath: scratch.appendingPathComponent("worker-\(index).log").path)
        }
        defer { for worker in workers { kill(worker.processIdentifier, SIGKILL) } }
        let file = scratch.appendingPathComponent("jobs.jsonl")
        var lines: [String] = []
        for queue in ["a", "b"] {
            for _ in 0..<5 {
                lines.append(#"{"executor":"echo","payload":{},"queue":"\#(queue)"}"#)
                lines.append(#"{"executor":"sum","payload":{"a":1,"b":2},"queue":"\#(queue)"}"#)
            }
        }
        try (lines.joined(separator: "\n") + "\n").write(to: file, atomically: true, encoding: .utf8)
        try #require(try await CLI.run(["enqueue", "--file", file.path], db: db).status == 0)
        @Sendable func count(_ filter: String) async throws -> Int {
            Int(
                try await CLI.run(["list", "--where", filter, "--count"], db: db).stdout.trimmingCharacters(
                    in: .whitespacesAndNewlines)) ?? -1
        }
        try await eventually(.seconds(30), "the sum jobs to run") {
            try await count("executor:sum state:succeeded") == 10
        }
        // Workers that ran everything else in well under a second left every echo job alone.
        try await Task.sleep(for: .milliseconds(500))
        #expect(try await count("executor:echo state:ready") == 10)
        let status = try await CLI.run(["status"], db: db)
        #expect(status.stdout.contains("executor echo is paused in every queue, since "), "\(status.stdout)")

        let resumed = try await CLI.run(["resume", "--executor", "echo"], db: db)
        #expect(resumed.status == 0, "\(resumed.stderr)")
        try await eventually(.seconds(30), "the echo jobs to run once resumed") {
            try await count("executor:echo state:succeeded") == 10
        }
        for worker in workers { kill(worker.processIdentifier, SIGTERM) }
        for worker in workers {
            await worker.wait()
            #expect(worker.terminationStatus == 0)
        }
    }
}
