import Foundation
import GRDB
import Testing

@testable import JobQCore
@testable import JobQSQL
@testable import JobQSQLite

/// Events, cancellation, batches and tracking sets across `jobq` processes.
@Suite("Events and groups across processes", .serialized)
struct EventProcessTests {
    static func waitFor(_ what: String, timeout: TimeInterval = 20, _ condition: () async throws -> Bool) async throws {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if try await condition() { return }
            try await pause(0.05)
        }
        // Once more after the deadline: a test task starved by a loaded machine may wake only
        // after it, with what it waited for long there.
        if try await condition() { return }
        Issue.record("timed out waiting for \(what)")
        throw TimedOut(what: what)
    }

    static func events(_ db: String, _ arguments: [String] = []) async throws -> [[String: Any]] {
        let result = try await CLI.run(["events", "--json"] + arguments, db: db)
        try #require(result.status == 0, "\(result.stderr)")
        return try result.stdout.split(separator: "\n").map {
            try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
        }
    }

    @Test func cancellingARunningShellJobSendsItsChildSIGTERM() async throws {
        let store = try TemporaryStore()
        let db = store.path
        let pidFile = store.directory.appendingPathComponent("child.pid").path
        let marker = store.directory.appendingPathComponent("terminated").path
        // The child notes the SIGTERM it gets: proof that it was asked to stop, not SIGKILLed,
        // and that it does not inherit the worker's ignored SIGTERM.
        let script =
            "echo $$ > \(pidFile); trap 'echo TERM > \(marker); kill $! 2>/dev/null; exit 143' TERM; sleep 600 & wait"
        let payload = try String(decoding: JSONSerialization.data(withJSONObject: ["script": script]), as: UTF8.self)
        let id = try await CLI.run(["enqueue", "shell", "--payload", payload], db: db)
            .stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let worker = try CLI.startDetached(
            ["work"], db: db, logPath: store.directory.appendingPathComponent("w.log").path)
        defer { kill(worker.processIdentifier, SIGKILL) }
        try await Self.waitFor("the child to start") {
            ((try? String(contentsOfFile: pidFile, encoding: .utf8)) ?? "").hasSuffix("\n")
        }
        let cancel = try await CLI.run(["cancel", id], db: db)
        try #require(cancel.status == 0, "jobq cancel: \(cancel.stderr)")
        try await Self.waitFor("the child to get SIGTERM", timeout: 15) {
            FileManager.default.fileExists(atPath: marker)
        }
        let pid = try #require(
            Int32(
                (try String(contentsOfFile: pidFile, encoding: .utf8)).trimmingCharacters(in: .whitespacesAndNewlines)))
        try await Self.waitFor("the child to exit", timeout: 15) { kill(pid, 0) != 0 }
        let kinds = try await Self.events(db, ["--job", id]).map { $0["kind"] as? String }
        #expect(kinds == ["enqueued", "started", "cancelled"], "no succeeded or failed event follows a cancel")
        #expect(try await CLITests.job(db, id)["state"] as? String == "cancelled")
    }

    @Test func batchWhoseWorkerIsKilledFiresOnceAfterRestart() async throws {
        let store = try TemporaryStore()
        let db = store.path
        #expect(
            try await CLI.run(
                ["batch", "create", "nightly", "--on-complete", "echo", "--payload", #"{"report": true}"#], db: db
            ).status == 0)
        let file = store.directory.appendingPathComponent("jobs.jsonl")
        let lines = (0..<120).map { _ in #"{"executor": "sleep", "payload": {"seconds": 0.02}, "batch": "nightly"}"# }
        try lines.joined(separator: "\n").write(to: file, atomically: true, encoding: .utf8)
        #expect(try await CLI.run(["enqueue", "--file", file.path], db: db).status == 0)
        #expect(try await CLI.run(["batch", "close", "nightly"], db: db).status == 0)

        let worker = try CLI.startDetached(
            ["work", "--lease", "1s", "--concurrency", "4"], db: db,
            logPath: store.directory.appendingPathComponent("w1.log").path)
        try await Self.waitFor("a third of the batch") {
            let object =
                try JSONSerialization.jsonObject(
                    with: Data(try await CLI.run(["batch", "show", "nightly", "--json"], db: db).stdout.utf8))
                as? [String: Any]
            return (object?["succeeded"] as? Int ?? 0) >= 40
        }
        kill(worker.processIdentifier, SIGKILL)
        await worker.wait()

        let restarted = try await CLI.run(["work", "--until-empty", "--lease", "1s", "--concurrency", "4"], db: db)
        #expect(restarted.status == 0, "\(restarted.stderr)")
        let batch = try #require(
            try JSONSerialization.jsonObject(
                with: Data(try await CLI.run(["batch", "show", "nightly", "--json"], db: db).stdout.utf8))
                as? [String: Any])
        #expect(batch["state"] as? String == "fired")
        #expect(batch["succeeded"] as? Int == 120)
        let callbacks = try await CLITests.jobs(db).filter { $0["executor"] as? String == "echo" }
        #expect(callbacks.count == 1, "the callback was enqueued exactly once")
        #expect(callbacks.first?["state"] as? String == "succeeded")
        #expect(try await Self.events(db, ["--kind", "batch"]).count == 1)
    }

    @Test func trackingSetFiresExactlyOncePerRoundUnderFourWorkerProcesses() async throws {
        let store = try TemporaryStore()
        let db = store.path
        #expect(try await CLI.run(["track", "add", "pair", "--member", "sum", "--member", "echo"], db: db).status == 0)
        let file = store.directory.appendingPathComponent("jobs.jsonl")
        let lines = (0..<2000).map { index in
            index % 3 == 0
                ? #"{"executor": "echo", "payload": \#(index)}"#
                : #"{"executor": "sum", "payload": {"a": \#(index), "b": 1}}"#
        }
        try lines.joined(separator: "\n").write(to: file, atomically: true, encoding: .utf8)
        #expect(try await CLI.run(["enqueue", "--file", file.path], db: db).status == 0)
        let workers = try (0..<4).map { index in
            try CLI.startDetached(
                ["work", "--until-empty", "--concurrency", "4"], db: db,
                logPath: store.directory.appendingPathComponent("w\(index).log").path)
        }
        for worker in workers {
            await worker.wait()
            #expect(worker.terminationStatus == 0)
        }

        // Replay the feed in commit order with the tracking rule; the firings must be exactly
        // where the rule puts them: right after the success that completed each round.
        let feed = try await Self.events(db, ["--kind", "succeeded", "--kind", "tracking"])
        var fresh: Set<String> = []
        var expectedRounds = 0
        var previousWasCompletingSuccess = false
        var firings = 0
        for event in feed {
            if event["kind"] as? String == "tracking" {
                firings += 1
                #expect(previousWasCompletingSuccess, "a firing follows the success that completed its round")
                let data = event["data"] as? [String: Any]
                #expect(data?["round"] as? Int == firings, "rounds are consecutive, none twice")
                previousWasCompletingSuccess = false
                continue
            }
            fresh.insert(event["executor"] as? String ?? "")
            if fresh.isSuperset(of: ["sum", "echo"]) {
                expectedRounds += 1
                fresh = []
                previousWasCompletingSuccess = true
            } else {
                previousWasCompletingSuccess = false
            }
        }
        #expect(feed.filter { $0["kind"] as? String == "succeeded" }.count == 2000)
        #expect(firings == expectedRounds)
        #expect(firings > 1)
        let sets = try await CLI.run(["track", "list", "--json"], db: db).stdout
        let set = try #require(try JSONSerialization.jsonObject(with: Data(sets.utf8)) as? [String: Any])
        #expect(set["round"] as? Int == firings)
        print("tracking: 2000 jobs, 4 worker processes, \(firings) rounds fired, each once")
    }

    @Test func waitExitCodes() async throws {
        let store = try TemporaryStore()
        let db = store.path
        func enqueue(_ arguments: [String]) async throws -> String {
            try await CLI.run(["enqueue"] + arguments, db: db).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        let ok = try await enqueue(["sum", "--param", "a=1", "--param", "b=2"])
        let bad = try await enqueue(["fail", "--max-attempts", "1"])
        let later = try await enqueue(["sum", "--param", "a=1", "--param", "b=2", "--delay", "1h"])
        let worker = try CLI.startDetached(
            ["work"], db: db, logPath: store.directory.appendingPathComponent("w.log").path)
        defer { kill(worker.processIdentifier, SIGKILL) }
        let success = try await CLI.run(["wait", ok, "--timeout", "20s"], db: db)
        #expect(success.status == 0, "\(success.stderr)")
        #expect(success.stdout.contains("job \(ok) succeeded"))
        #expect(try await CLI.run(["wait", ok, bad, "--timeout", "20s"], db: db).status == 1)
        let start = Date()
        let timeout = try await CLI.run(["wait", later, "--timeout", "300ms"], db: db)
        #expect(timeout.status == 124)
        #expect(Date().timeIntervalSince(start) < 120, "well before the job or the wait would have ended on its own")
        #expect(try await CLI.run(["wait", "9999"], db: db).status == 3)
        #expect(try await CLI.run(["wait", ok, "--timeout", "soon"], db: db).status == 2)
    }

    @Test func eventsCommandFiltersAndResumesFromACursor() async throws {
        let store = try TemporaryStore()
        let db = store.path
        for _ in 0..<3 { try await CLI.run(["enqueue", "sum", "--param", "a=1", "--param", "b=2"], db: db) }
        #expect(try await CLI.run(["work", "--until-empty"], db: db).status == 0)
        let all = try await Self.events(db)
        #expect(all.count == 9)
        let ids = all.compactMap { $0["id"] as? Int }
        #expect(ids == Array(ids[0]...ids[0] + 8))
        let tail = try await Self.events(db, ["--since", String(ids[3])])
        #expect(tail.compactMap { $0["id"] as? Int } == Array(ids[4...]))
        #expect(try await Self.events(db, ["--kind", "succeeded"]).count == 3)
        #expect(try await Self.events(db, ["--job", "2"]).allSatisfy { $0["jobId"] as? Int == 2 })
        let bad = try await CLI.run(["events", "--kind", "exploded"], db: db)
        #expect(bad.status == 2)
        #expect(bad.stderr.contains("unknown event kind 'exploded'"))

        let follower = try CLI.start(
            ["events", "--follow", "--json", "--since", String(ids.last!)], db: db,
            stdoutPath: store.directory.appendingPathComponent("follow.out").path,
            stderrPath: store.directory.appendingPathComponent("follow.err").path)
        defer { kill(follower.processIdentifier, SIGKILL) }
        try await CLI.run(["enqueue", "echo", "--payload", "1"], db: db)
        try await Self.waitFor("the follower to print the new event") {
            ((try? String(contentsOfFile: store.directory.appendingPathComponent("follow.out").path, encoding: .utf8))
                ?? "")
                .contains("\"kind\":\"enqueued\"")
        }
    }
}
