import Foundation
import Testing

@testable import JobQCore
@testable import JobQSQL
@testable import JobQSQLite

/// Schedules through the real `jobq` binary: the commands, and schedulers in worker processes.
@Suite("Schedules across processes", .serialized)
struct ScheduleProcessTests {
    static func show(_ db: String, _ name: String) async throws -> [String: Any] {
        let shown = try await CLI.run(["schedule", "show", name, "--json"], db: db)
        try #require(shown.status == 0, "\(shown.stderr)")
        return try #require(try JSONSerialization.jsonObject(with: Data(shown.stdout.utf8)) as? [String: Any])
    }

    @Test func commandsAddListShowPauseResumeRemoveAndRefuseBadInput() async throws {
        let store = try TemporaryStore()
        let db = store.path
        let refused: [([String], String)] = [
            (["schedule", "add", "x", "echo"], "give one timing"),
            (["schedule", "add", "x", "echo", "--every", "1s", "--cron", "@daily"], "give one timing"),
            (["schedule", "add", "x", "echo", "--every", "0s"], "the interval must be at least 1ms"),
            (["schedule", "add", "x", "echo", "--every", "1s", "--times", "0"], "times must be at least 1"),
            (["schedule", "add", "x", "echo", "--cron", "0 25 * * *"], "hour field '25': 25 is out of range 0-23"),
            (
                ["schedule", "add", "x", "echo", "--cron", "@daily", "--tz", "Mars/Olympus"],
                "unknown time zone 'Mars/Olympus'"
            ),
            (["schedule", "add", "x", "echo", "--at", "tomorrow"], "--at: 'tomorrow' is not an ISO 8601 time"),
            (["schedule", "add", "bad\u{1}name", "echo", "--every", "1s"], "must be 1 to 200 letters"),
            (["schedule", "add", "x", "ehco", "--every", "1s"], "unknown executor 'ehco'"),
            (
                ["schedule", "add", "x", "echo", "--every", "1s", "--missed", "later"],
                "--missed must be skip or catchUp"
            ),
            (["schedule", "add", "x", "echo", "--every", "1s", "--payload", "{nope"], "--payload")
        ]
        for (arguments, message) in refused {
            let result = try await CLI.run(arguments, db: db)
            #expect(result.status == 2, "\(arguments) exits 2, got \(result.status): \(result.stderr)")
            #expect(result.stderr.contains(message), "\(arguments): \(result.stderr)")
        }
        #expect(try await CLI.run(["schedule", "list", "--json"], db: db).stdout.isEmpty, "nothing was stored")

        let added = try await CLI.run(
            [
                "schedule", "add", "nightly", "shell", "--payload", #"{"script": "true"}"#, "--cron", "30 2 * * *",
                "--tz", "America/New_York",
                "--queue", "ops", "--priority", "4"
            ], db: db)
        #expect(added.status == 0, "\(added.stderr)")
        #expect(added.stdout.contains(#"schedule nightly: cron "30 2 * * *" America/New_York, next "#))
        let list = try await CLI.run(["schedule", "list"], db: db).stdout
        #expect(list.contains("nightly") && list.contains("active"), "\(list)")
        var shown = try await Self.show(db, "nightly")
        #expect((shown["next"] as? [String])?.count == 5)
        #expect(shown["queue"] as? String == "ops")
        #expect(try await CLI.run(["schedule", "pause", "nightly"], db: db).status == 0)
        shown = try await Self.show(db, "nightly")
        #expect(shown["paused"] as? Bool == true)
        #expect((shown["next"] as? [String])?.isEmpty == true, "a paused schedule has no upcoming runs")
        #expect(try await CLI.run(["schedule", "resume", "nightly"], db: db).stdout.contains("resumed; next"))
        #expect(try await CLI.run(["schedule", "remove", "nightly"], db: db).status == 0)
        #expect(try await CLI.run(["schedule", "show", "nightly"], db: db).status == 3)
        #expect(try await CLI.run(["schedule", "remove", "nightly"], db: db).status == 3)
        let changes = try await EventProcessTests.events(db, ["--kind", "schedule"])
        #expect(
            changes.compactMap { ($0["data"] as? [String: Any])?["change"] as? String } == [
                "added", "paused", "resumed", "removed"
            ])
    }

    @Test func workRunsTheSchedulerUnlessToldNot() async throws {
        let store = try TemporaryStore()
        let db = store.path
        #expect(
            try await CLI.run(["schedule", "add", "beat", "echo", "--every", "200ms", "--times", "3"], db: db).status
                == 0)
        let idle = try await CLI.run(["work", "--until-empty", "--no-scheduler"], db: db)
        #expect(idle.status == 0)
        try await pause(0.5)
        let quiet = try CLI.startDetached(
            ["work", "--no-scheduler"], db: db, logPath: store.directory.appendingPathComponent("quiet.log").path)
        try await pause(0.8)
        kill(quiet.processIdentifier, SIGTERM)
        await quiet.wait()
        #expect((try await Self.show(db, "beat"))["made"] as? Int == 0, "no scheduler, no jobs")

        let worker = try CLI.startDetached(
            ["work"], db: db, logPath: store.directory.appendingPathComponent("worker.log").path)
        try await EventProcessTests.waitFor("three beats to run") {
            let runs = (try await Self.show(db, "beat"))["lastRuns"] as? [[String: Any]] ?? []
            return runs.count == 3 && runs.allSatisfy { $0["state"] as? String == "succeeded" }
        }
        kill(worker.processIdentifier, SIGTERM)
        await worker.wait()
        let shown = try await Self.show(db, "beat")
        #expect(shown["made"] as? Int == 3)
        #expect(shown["nextRunAt"] is NSNull)
        let text = try await CLI.run(["schedule", "show", "beat"], db: db).stdout
        #expect(text.contains("state: done, 3 job(s) made"), "\(text)")
        #expect(text.components(separatedBy: "  succeeded").count - 1 == 3, "\(text)")
    }

    @Test func twoSchedulersAndAKillMakeOneJobPerOccurrence() async throws {
        let store = try TemporaryStore()
        let db = store.path
        #expect(
            try await CLI.run(["schedule", "add", "tick", "echo", "--every", "100ms", "--times", "30"], db: db).status
                == 0)
        let logs = (0..<3).map { store.directory.appendingPathComponent("w\($0).log").path }
        let first = try CLI.startDetached(["work"], db: db, logPath: logs[0])
        let second = try CLI.startDetached(["work"], db: db, logPath: logs[1])
        try await EventProcessTests.waitFor("a third of the ticks") {
            ((try await Self.show(db, "tick"))["made"] as? Int ?? 0) >= 10
        }
        kill(first.processIdentifier, SIGKILL)
        await first.wait()
        let third = try CLI.startDetached(["work"], db: db, logPath: logs[2])
        try await EventProcessTests.waitFor("all the ticks", timeout: 30) {
            ((try await Self.show(db, "tick"))["made"] as? Int ?? 0) == 30
        }
        for worker in [second, third] {
            kill(worker.processIdentifier, SIGTERM)
            await worker.wait()
        }
        let jobs = try await CLITests.jobs(db).filter { $0["schedule"] as? String == "tick" }
        #expect(jobs.count == 30)
        #expect(Set(jobs.compactMap { $0["occurrence"] as? String }).count == 30, "one job per occurrence")
    }
}
