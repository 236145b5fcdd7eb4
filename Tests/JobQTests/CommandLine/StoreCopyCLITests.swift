import Foundation
import Testing

@testable import JobQCore

/// `jobq copy`: a store that uses every feature, copied into a new SQLite file or a PostgreSQL
/// database, is finished by workers there exactly as by workers on the original; a copy killed
/// midway goes on when run again and ends identical to one that was not.
@Suite("jobq copy")
struct StoreCopyCLITests {
    /// The fixture script that builds a store using every feature, mid-flight.
    static let featureScript = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Fixtures/feature-store.sh")

    @Test(arguments: TestStore.all)
    func aStoreUsingEveryFeatureIsFinishedOnItsCopyAsOnTheOriginal(destination: TestStore) async throws {
        let folder = try Self.scratchFolder("jobq-copy")
        let original = folder.appendingPathComponent("original.sqlite").path
        let setupRuns = folder.appendingPathComponent("runs-setup.txt").path
        try await Self.runScript(db: original, runlog: setupRuns, folder: folder)
        let copy = try await destination.location()

        let copied = try await CLI.run(["copy", "--from", original, "--to", copy], db: nil)
        #expect(copied.status == 0, "\(copied.stderr)")
        for name in [
            "jobs", "events", "workflows", "workflow_groups", "lanes", "batches", "tracking_members",
            "schedules", "triggers", "trigger_emits", "dependencies", "queues", "payload_indexes"
        ] {
            let line = copied.stdout.split(separator: "\n").first { $0.hasPrefix(name + " ") }
            #expect(line?.contains("same") == true, "\(name): \(line ?? "missing")\n\(copied.stdout)")
        }
        #expect(copied.stdout.contains("event ids kept"), "\(copied.stdout)")
        #expect(!copied.stdout.contains("DIFFERS"))
        let copiedList = try await CLI.run(["list", "--json", "--limit", "10000"], db: copy)
        let highestCopied = try #require(try Self.outcomes(copiedList.stdout).map(\.id).max())

        // Workers finish both: what is ready, then what a lane resumed, a batch closed and a
        // second emit make ready.
        var finished: [String: (jobs: [Outcome], runs: [Int64])] = [:]
        for (side, db) in [("original", original), ("copy", copy)] {
            let runlog = folder.appendingPathComponent("runs-\(side).txt").path
            try await Self.work(db: db, runlog: runlog)
            for command in [
                ["lane", "resume", "deploys"], ["batch", "close", "import"],
                ["emit", "app.launched", "--dedupe", "second"]
            ] {
                let result = try await CLI.run(command, db: db)
                #expect(result.status == 0, "\(side) \(command): \(result.stderr)")
            }
            try await Self.work(db: db, runlog: runlog)
            let listed = try await CLI.run(["list", "--json", "--limit", "10000"], db: db)
            #expect(listed.status == 0, "\(listed.stderr)")
            let runs = try String(contentsOfFile: runlog, encoding: .utf8).split(separator: "\n").compactMap {
                Int64($0)
            }
            finished[side] = (try Self.outcomes(listed.stdout), runs)
        }
        let originalSide = try #require(finished["original"])
        let copySide = try #require(finished["copy"])
        #expect(originalSide.jobs.count > 60, "the fixture made \(originalSide.jobs.count) jobs")
        #expect(originalSide.jobs.count == copySide.jobs.count)
        // The jobs made after the copy (callbacks, a second emit's tasks) take their ids from each
        // store's own counter (on SQLite after the newest event, on PostgreSQL after the newest
        // job): they are compared in order, each copy id standing for the original's.
        let copiedStore = try await JobQueue.opening(copy, asDestination: destination)
        #expect(try await copiedStore.copyRecord()?.renumberedThrough == nil)
        var newIDs: [Int64: Int64] = [:]
        for (a, b) in zip(originalSide.jobs, copySide.jobs) {
            if a.id != b.id { newIDs[b.id] = a.id }
            if a.outcome != b.outcome {
                Issue.record("finished differently:\n  original \(a.id) \(a.outcome)\n  copy     \(b.id) \(b.outcome)")
            }
        }
        // Two batch callbacks and the second emit's task.
        #expect(copySide.jobs.filter { $0.id > highestCopied }.count == 3)
        #expect(originalSide.jobs.filter { $0.id > highestCopied }.count == 3)
        // Each job ran once on each side, and the same jobs ran.
        let copyRuns = copySide.runs.map { newIDs[$0] ?? $0 }
        #expect(Set(copyRuns).count == copyRuns.count, "a job ran twice on the copy: \(copyRuns.sorted())")
        #expect(Set(originalSide.runs).count == originalSide.runs.count)
        #expect(copyRuns.sorted() == originalSide.runs.sorted())
        #expect(copyRuns.count > 40)
        // Nothing that ran before the copy ran again after it.
        let before = Set(
            try String(contentsOfFile: setupRuns, encoding: .utf8).split(separator: "\n").compactMap { Int64($0) })
        #expect(before.isDisjoint(with: copyRuns))
        // Every job is final but the schedules' (none due) and the paused executor's (none).
        #expect(copySide.jobs.allSatisfy { ["succeeded", "dead", "cancelled"].contains($0.state) })
        #expect(copySide.jobs.contains { $0.state == "dead" })
        for command in [
            ["schedule", "list"], ["trigger", "list"], ["workflow", "list"], ["batch", "show", "import"],
            ["batch", "show", "export"], ["lane", "show", "deploys"], ["track", "list"], ["status"]
        ] {
            let a = try await CLI.run(command, db: original)
            let b = try await CLI.run(command, db: copy)
            #expect(a.status == 0 && b.status == 0, "\(command): \(a.stderr) \(b.stderr)")
            var copied = b.stdout
            for (copyID, originalID) in newIDs {
                copied = copied.replacingOccurrences(
                    of: "\\b\(copyID)\\b", with: String(originalID), options: .regularExpression)
            }
            #expect(Self.withoutTimes(a.stdout) == Self.withoutTimes(copied), "\(command)")
        }
    }

    @Test(RunsAlone.trait, arguments: TestStore.all)
    func aCopyKilledMidwayGoesOnWhenRunAgainAndEndsIdentical(destination: TestStore) async throws {
        let folder = try Self.scratchFolder("jobq-copy-kill")
        let source = folder.appendingPathComponent("source.sqlite").path
        // 12,000 jobs (half of them run, so their events are many) in one file.
        let lines = folder.appendingPathComponent("jobs.jsonl").path
        let text = (1...12_000).map { #"{"executor": "echo", "queue": "q\#($0 % 4)", "payload": {"n": \#($0)}}"# }
            .joined(separator: "\n")
        try text.write(toFile: lines, atomically: true, encoding: .utf8)
        #expect(try await CLI.run(["enqueue", "--file", lines], db: source).status == 0)
        #expect(try await CLI.run(["work", "--queue", "q0", "--queue", "q1", "--until-empty"], db: source).status == 0)

        let interrupted = try await destination.location()
        let copyOut = folder.appendingPathComponent("copy.out").path
        let copyErr = folder.appendingPathComponent("copy.err").path
        let child = try CLI.start(
            ["copy", "--from", source, "--to", interrupted, "--rows-per-transaction", "500"], db: nil,
            stdoutPath: copyOut, stderrPath: copyErr)
        // Killed once it has written some jobs and not all.
        let watcher = try await JobQueue.opening(interrupted, asDestination: destination)
        var seen = 0
        let deadline = ContinuousClock.now + .seconds(120)
        while ContinuousClock.now < deadline {
            seen = (try? await watcher.count(where: .all)) ?? 0
            if seen >= 1_000 { break }
            try await Task.sleep(for: .milliseconds(5))
        }
        kill(child.processIdentifier, SIGKILL)
        await child.wait()
        #expect(seen >= 1_000 && seen < 12_000, "killed at \(seen) jobs copied")
        let partial = (try? await watcher.count(where: .all)) ?? 0
        #expect(partial < 12_000, "the copy had finished before it was killed")

        // No worker runs on a store whose copy has not finished.
        let worker = try await CLI.run(["work", "--until-empty"], db: interrupted)
        #expect(worker.status != 0)
        #expect(worker.stderr.contains("being filled by `jobq copy`"), "\(worker.stderr)")
        let rerun = try await CLI.run(["copy", "--from", source, "--to", interrupted], db: nil)
        #expect(rerun.status == 0, "\(rerun.stderr)\n\(rerun.stdout)")
        #expect(rerun.stdout.contains("went on with a copy begun earlier"))

        let clean = try await destination.location()
        let whole = try await CLI.run(["copy", "--from", source, "--to", clean], db: nil)
        #expect(whole.status == 0, "\(whole.stderr)")
        #expect(Self.checkTable(rerun.stdout) == Self.checkTable(whole.stdout))
        #expect(Self.checkTable(whole.stdout).contains { $0.hasPrefix("jobs ") && $0.contains("12000") })
        let a = try await CLI.run(["list", "--json", "--limit", "30000"], db: interrupted)
        let b = try await CLI.run(["list", "--json", "--limit", "30000"], db: clean)
        #expect(try Self.outcomes(a.stdout) == Self.outcomes(b.stdout))
        #expect(try Self.outcomes(a.stdout).count == 12_000)
        // Another run of the finished copy is refused: the destination is a copy that may have
        // run jobs since.
        let again = try await CLI.run(["copy", "--from", source, "--to", interrupted], db: nil)
        #expect(again.status == 2 || again.status == 1, "\(again.stdout)")
        #expect(again.stderr.contains("finished copy"), "\(again.stderr)")
    }

    @Test func onATerminalTheCopyDrawsAProgressBar() async throws {
        let folder = try Self.scratchFolder("jobq-copy-tty")
        let source = folder.appendingPathComponent("source.sqlite").path
        let lines = folder.appendingPathComponent("jobs.jsonl").path
        try (1...3_000).map { #"{"executor": "echo", "payload": {"n": \#($0)}}"# }.joined(separator: "\n")
            .write(toFile: lines, atomically: true, encoding: .utf8)
        #expect(try await CLI.run(["enqueue", "--file", lines], db: source).status == 0)
        // `script` (util-linux, in every Debian) runs the command on a pseudo-terminal.
        let out = folder.appendingPathComponent("tty.out").path
        let command = [
            CLI.binary.path, "copy", "--from", source, "--to", folder.appendingPathComponent("copy.sqlite").path,
            "--rows-per-transaction", "200"
        ].map { "'\($0)'" }.joined(separator: " ")
        let child = try Child(
            executable: URL(fileURLWithPath: "/usr/bin/script"), arguments: ["-qec", command, "/dev/null"],
            environment: [:], stdoutPath: out, stderrPath: out + ".err")
        await child.wait()
        let screen = try String(contentsOfFile: out, encoding: .utf8)
        #expect(child.terminationStatus == 0, "\(screen)")
        // The bar is redrawn in place (a carriage return, then the line cleared).
        #expect(screen.contains("\r\u{1B}[K"), "\(screen.debugDescription)")
        #expect(screen.contains("jobs") && screen.contains("[####"), "\(screen)")
        #expect(screen.contains("/3000"))
        #expect(screen.contains("copied and checked"))
    }

    // MARK: Helpers

    /// A new folder for a test's stores and files, removed when the tests end.
    static func scratchFolder(_ prefix: String) throws -> URL {
        let folder = TestScratch.url(prefix)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return folder
    }

    static func runScript(db: String, runlog: String, folder: URL) async throws {
        let out = folder.appendingPathComponent("script.out").path
        let err = folder.appendingPathComponent("script.err").path
        let child = try Child(
            executable: URL(fileURLWithPath: "/bin/bash"), arguments: [featureScript.path],
            environment: ["JOBQ": CLI.binary.path, "JOBQ_DB": db, "RUNLOG": runlog], stdoutPath: out, stderrPath: err)
        await child.wait()
        #expect(child.terminationStatus == 0, "\((try? String(contentsOfFile: err, encoding: .utf8)) ?? "")")
    }

    static func work(db: String, runlog: String) async throws {
        let result = try await CLI.run(
            [
                "work", "--queue", "work", "--queue", "parts", "--queue", "first", "--queue", "default",
                "--until-empty",
                "--no-scheduler", "--allow-shell", "--concurrency", "4"
            ],
            db: db, environment: ["RUNLOG": runlog])
        #expect(result.status == 0, "\(result.stderr)")
    }

    /// A job as it finished: its id, state, and the rest of its fields but times.
    struct Outcome: Equatable {
        let id: Int64
        let state: String
        let outcome: String
    }

    /// Each job's outcome, in id order, without the times, which differ between runs.
    static func outcomes(_ jsonLines: String) throws -> [Outcome] {
        try jsonLines.split(separator: "\n").map { line in
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            let kept = [
                "state", "attempt", "maxAttempts", "queue", "executor", "payload", "result", "error", "priority",
                "name", "batch", "workflow", "lane", "partition", "unique"
            ]
            let fields = try kept.map { key in "\(key)=\(try object[key].map(Self.canonical) ?? "-")" }
            return Outcome(
                id: try #require(object["id"] as? Int64 ?? (object["id"] as? Int).map(Int64.init)),
                state: object["state"] as? String ?? "", outcome: fields.joined(separator: " "))
        }
    }

    /// A JSON value as text with its objects' keys sorted.
    static func canonical(_ value: Any) throws -> String {
        let data = try JSONSerialization.data(withJSONObject: value, options: [.sortedKeys, .fragmentsAllowed])
        return String(decoding: data, as: UTF8.self)
    }

    /// The lines of the check's table, without the header.
    static func checkTable(_ output: String) -> [String] {
        output.split(separator: "\n").map(String.init).filter { $0.contains("same (") || $0.contains("DIFFERS") }
    }

    /// Text with ISO 8601 times and durations blanked.
    static func withoutTimes(_ text: String) -> String {
        text.replacingOccurrences(
            of: #"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z|\d+(\.\d+)?(ms|s|m|h) ago|in \d+(\.\d+)?(ms|s|m|h)"#,
            with: "T", options: .regularExpression)
    }
}

extension JobQueue {
    /// The store at `location` (a test's destination), to watch it from the test.
    static func opening(_ location: String, asDestination store: TestStore) async throws -> JobQueue {
        switch store {
        case .sqlite: return try JobQueue(path: location)
        case .postgres: return try await JobQueue(postgres: location, logger: PostgresTestServer.logger)
        }
    }
}
