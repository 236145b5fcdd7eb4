import Foundation
import GRDB
import JobQPostgres
import Testing

@testable import JobQCore
@testable import JobQSQL
@testable import JobQSQLite

/// The `jobq` binary, run as a process on a temporary store.
@Suite("jobq command line")
struct CLITests {
    /// Every job in the store as JSON objects.
    static func jobs(_ db: String) async throws -> [[String: Any]] {
        let result = try await CLI.run(["list", "--json", "--limit", "100000"], db: db)
        try #require(result.status == 0, "list failed: \(result.stderr)")
        return try result.stdout.split(separator: "\n").map {
            try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
        }
    }

    static func job(_ db: String, _ id: String) async throws -> [String: Any] {
        let result = try await CLI.run(["show", id, "--json"], db: db)
        try #require(result.status == 0, "show failed: \(result.stderr)")
        return try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
    }

    @Test(arguments: TestStore.all) func enqueueWorkAndShowEachBuiltinExecutor(kind: TestStore) async throws {
        let db = try await kind.location()
        func enqueue(_ arguments: [String]) async throws -> String {
            let result = try await CLI.run(["enqueue"] + arguments, db: db)
            try #require(result.status == 0, "enqueue \(arguments) failed: \(result.stderr)")
            return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        let sum = try await enqueue(["sum", "--param", "a=1", "--param", "b=2"])
        let echo = try await enqueue(["echo", "--payload", #"{"hello": "world", "n": [1, 2]}"#])
        let sleep = try await enqueue(["sleep", "--payload", #"{"seconds": 0.1}"#])
        let shell = try await enqueue(["shell", "--", "printf", "%s-%s", "a b", "$c"])
        let fail = try await enqueue(["fail", "--payload", #"{"message": "on purpose"}"#, "--max-attempts", "2"])

        // A PostgreSQL worker runs shell jobs only when told to.
        let allowShell = kind == .postgres ? ["--allow-shell"] : []
        let work = try await CLI.run(["work", "--until-empty", "--backoff", "50ms"] + allowShell, db: db)
        #expect(work.status == 0, "\(work.stderr)")
        // The failed job waits for its retry; --until-empty does not wait for it. Run again.
        try await pause(0.2)
        #expect(try await CLI.run(["work", "--until-empty", "--backoff", "50ms"] + allowShell, db: db).status == 0)

        #expect(try await Self.job(db, sum)["result"] as? [String: Int] == ["sum": 3])
        #expect(
            try await Self.job(db, echo)["result"] as? NSDictionary == ["hello": "world", "n": [1, 2]] as NSDictionary)
        #expect(try await Self.job(db, sleep)["state"] as? String == "succeeded")
        let shellResult = try #require(try await Self.job(db, shell)["result"] as? [String: Any])
        #expect(shellResult["stdout"] as? String == "a b-$c", "arguments pass through without a shell")
        #expect(shellResult["exitCode"] as? Int == 0)
        let failed = try await Self.job(db, fail)
        #expect(failed["state"] as? String == "dead")
        #expect(failed["attempt"] as? Int == 2)
        #expect(failed["error"] as? String == "on purpose")
    }

    /// `enqueue --wait` prints the result once a worker (another process) ran the job, and exits
    /// as `jobq wait` does: 1 for a dead job (saying why), 124 when --wait-timeout passes.
    @Test func enqueueWaitPrintsTheResultAndExitsAsWaitDoes() async throws {
        let store = try TemporaryStore()
        let db = store.path
        _ = try store.open()
        let worker = try CLI.startDetached(
            ["work"], db: db, logPath: store.directory.appendingPathComponent("work").path)
        defer { kill(worker.processIdentifier, SIGKILL) }
        let summed = try await CLI.run(
            ["enqueue", "sum", "--param", "a=1", "--param", "b=2", "--wait", "--wait-timeout", "60s"], db: db)
        #expect(summed.status == 0, "\(summed.stderr)")
        #expect(summed.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == #"{"sum":3}"#)
        let failed = try await CLI.run(
            ["enqueue", "fail", "--payload", #"{"message":"boom"}"#, "--max-attempts", "1", "--wait"], db: db)
        #expect(failed.status == 1)
        #expect(failed.stderr.contains("dead") && failed.stderr.contains("boom"), "\(failed.stderr)")
        kill(worker.processIdentifier, SIGKILL)
        await worker.wait()
        let slow = try await CLI.run(["enqueue", "sum", "--wait", "--wait-timeout", "300ms"], db: db)
        #expect(slow.status == 124)
        #expect(slow.stderr.contains("still ready"), "\(slow.stderr)")
        let misplaced = try await CLI.run(["enqueue", "sum", "--wait-timeout", "1s"], db: db)
        #expect(misplaced.status == 2 && misplaced.stderr.contains("--wait-timeout goes with --wait"))
    }

    /// `workflow submit --wait` prints the workflow's final result (a parallel group's as an
    /// array) once another process ran it; exit 1 for a failed workflow, 124 when the wait ran out.
    @Test func workflowSubmitWaitPrintsTheFinalResult() async throws {
        let store = try TemporaryStore()
        let db = store.path
        _ = try store.open()
        func file(_ name: String, _ text: String) throws -> String {
            let path = store.directory.appendingPathComponent(name).path
            try text.write(toFile: path, atomically: true, encoding: .utf8)
            return path
        }
        let sums = try file(
            "sums.json",
            #"{"sequence": [{"executor": "sum", "payload": {"a": 1, "b": 1}}, {"parallel": [{"executor": "sum", "payload": {"a": 2, "b": 2}}, {"executor": "sum", "payload": {"a": 3, "b": 3}}]}]}"#
        )
        let doomed = try file(
            "doomed.json", #"{"sequence": [{"executor": "fail", "payload": {"message": "boom"}, "maxAttempts": 1}]}"#)
        let worker = try CLI.startDetached(
            ["work"], db: db, logPath: store.directory.appendingPathComponent("work").path)
        defer { kill(worker.processIdentifier, SIGKILL) }
        let summed = try await CLI.run(["workflow", "submit", sums, "--wait", "--wait-timeout", "60s"], db: db)
        #expect(summed.status == 0, "\(summed.stderr)")
        #expect(summed.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == #"[{"sum":4},{"sum":6}]"#)
        let failed = try await CLI.run(["workflow", "submit", doomed, "--wait", "--wait-timeout", "60s"], db: db)
        #expect(failed.status == 1 && failed.stderr.contains("failed"), "\(failed.stderr)")
        kill(worker.processIdentifier, SIGKILL)
        await worker.wait()
        let slow = try await CLI.run(["workflow", "submit", sums, "--wait", "--wait-timeout", "300ms"], db: db)
        #expect(slow.status == 124 && slow.stderr.contains("still running"), "\(slow.stderr)")
    }

    /// `--unique-conflict replace` and `--debounce` change the pending holder of the key; bad
    /// rules are refused with exit 2 and nothing stored.
    @Test func uniqueConflictRulesFromTheCommandLine() async throws {
        let store = try TemporaryStore()
        let db = store.path
        let first = try await CLI.run(
            ["enqueue", "sum", "--param", "a=1", "--unique", "k", "--unique-conflict", "replace"], db: db)
        let second = try await CLI.run(
            ["enqueue", "sum", "--param", "a=5", "--unique", "k", "--unique-conflict", "replace", "--json"], db: db)
        #expect(first.status == 0 && second.status == 0, "\(first.stderr)\(second.stderr)")
        let job = try #require(try JSONSerialization.jsonObject(with: Data(second.stdout.utf8)) as? [String: Any])
        #expect(job["id"] as? Int == Int(first.stdout.trimmingCharacters(in: .whitespacesAndNewlines)))
        #expect((job["payload"] as? [String: Any])?["a"] as? Int == 5)
        _ = try await CLI.run(["enqueue", "sum", "--unique", "d", "--debounce", "1m"], db: db)
        let debounced = try await CLI.run(["enqueue", "sum", "--unique", "d", "--debounce", "1m", "--json"], db: db)
        #expect(debounced.stdout.contains(#""state":"scheduled""#), "\(debounced.stdout)")
        for arguments in [
            ["--unique", "k", "--unique-conflict", "nope"], ["--unique-conflict", "replace"],
            ["--unique", "k", "--debounce", "5s", "--debounce-max", "1s"], ["--unique", "k", "--debounce-max", "1s"]
        ] {
            let bad = try await CLI.run(["enqueue", "sum"] + arguments, db: db)
            #expect(bad.status == 2, "\(arguments): \(bad.stderr)")
        }
        let listed = try await CLI.run(["list", "--json"], db: db)
        #expect(listed.stdout.split(separator: "\n").count == 2, "\(listed.stdout)")
    }

    /// `--expire-after` (and a job line's `expireAfter`) set the deadline to start from the
    /// job's run time; a window that is not longer than zero is refused with exit 2.
    @Test func expireAfterFromTheCommandLine() async throws {
        let store = try TemporaryStore()
        let db = store.path
        func job(_ stdout: String) throws -> [String: Any] {
            try #require(try JSONSerialization.jsonObject(with: Data(stdout.utf8)) as? [String: Any])
        }
        func window(_ job: [String: Any]) throws -> Double {
            let runAt = try #require(ISO8601.parse(job["runAt"] as? String ?? ""))
            let expiresAt = try #require(ISO8601.parse(job["expiresAt"] as? String ?? ""), "\(job)")
            return expiresAt.timeIntervalSince(runAt)
        }
        // Counted from the command's start: the job's run time is its insert, after the store
        // opened, which on a loaded machine can take seconds of the window.
        let started = ContinuousClock.now
        let now = try await CLI.run(["enqueue", "sum", "--expire-after", "10m", "--json"], db: db)
        let took = (ContinuousClock.now - started).inSeconds
        #expect(now.status == 0, "\(now.stderr)")
        let nowWindow = try window(try job(now.stdout))
        #expect(nowWindow <= 600.5 && nowWindow >= 600 - took - 0.5, "\(nowWindow) s, the command took \(took) s")
        let later = try await CLI.run(["enqueue", "sum", "--delay", "1h", "--expire-after", "30m", "--json"], db: db)
        #expect(abs(try window(try job(later.stdout)) - 1800) < 1, "counted from the run time")
        let file = store.directory.appendingPathComponent("jobs.jsonl")
        try #"{"executor": "sum", "expireAfter": "90s"}"#.write(to: file, atomically: true, encoding: .utf8)
        let fileStarted = ContinuousClock.now
        let lines = try await CLI.run(["enqueue", "--file", file.path], db: db)
        let fileTook = (ContinuousClock.now - fileStarted).inSeconds
        #expect(lines.status == 0, "\(lines.stderr)")
        let listed = try await CLI.run(["list", "--json"], db: db)
        let third = try job(String(listed.stdout.split(separator: "\n")[2]))
        let thirdWindow = try window(third)
        #expect(thirdWindow <= 90.5 && thirdWindow >= 90 - fileTook - 0.5, "\(thirdWindow) s, took \(fileTook) s")
        for bad in ["0s", "-5m", "soon"] {
            let refused = try await CLI.run(["enqueue", "sum", "--expire-after", bad], db: db)
            #expect(refused.status == 2 && refused.stderr.contains("--expire-after"), "\(bad): \(refused.stderr)")
        }
        let count = try await CLI.run(["list", "--json"], db: db)
        #expect(count.stdout.split(separator: "\n").count == 3)
        let shown = try await CLI.run(["show", "1"], db: db)
        #expect(shown.stdout.contains("expiresAt"), "\(shown.stdout)")
    }

    @Test func jobJSONHasTheDocumentedFields() async throws {
        let store = try TemporaryStore()
        let result = try await CLI.run(
            [
                "enqueue", "sum", "--payload", #"{"a":1,"b":2}"#, "--queue", "math", "--priority", "7", "--delay", "1h",
                "--timeout", "30s", "--json"
            ],
            db: store.path)
        #expect(result.status == 0, "\(result.stderr)")
        let job = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        // Exactly the fields the command line article's example shows.
        let readme = try ReadmeTests.article("CommandLine")
        let start = try #require(readme.range(of: "print jobs as:\n\n```json\n"))
        let end = try #require(readme.range(of: "```", range: start.upperBound..<readme.endIndex))
        let example = try #require(
            try JSONSerialization.jsonObject(
                with: Data(readme[start.upperBound..<end.lowerBound].replacingOccurrences(of: "\n", with: "").utf8))
                as? [String: Any])
        #expect(Set(job.keys) == Set(example.keys), "README's job JSON lists the fields jobq prints")
        #expect(job["state"] as? String == "scheduled")
        #expect(job["queue"] as? String == "math")
        #expect(job["priority"] as? Int == 7)
        #expect(job["timeout"] as? Int == 30)
        let runAt = try #require(parseISO(job["runAt"] as? String))
        #expect(abs(runAt.timeIntervalSinceNow - 3600) < 60)
    }

    @Test func fileEnqueuesAllLinesInOneTransaction() async throws {
        let store = try TemporaryStore()
        let file = store.directory.appendingPathComponent("jobs.jsonl")
        try """
        {"executor": "sum", "payload": {"a": 1, "b": 2}, "priority": 3}

        {"executor": "echo", "payload": "hi", "queue": "other", "delay": "1m"}
        {"executor": "sleep", "payload": {"seconds": 0}, "maxAttempts": 1, "timeout": "5s"}
        """.write(to: file, atomically: true, encoding: .utf8)
        let result = try await CLI.run(["enqueue", "--file", file.path], db: store.path)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.split(separator: "\n").count == 3)
        let jobs = try await Self.jobs(store.path)
        try #require(jobs.count == 3)
        #expect(jobs.map { $0["executor"] as? String } == ["sum", "echo", "sleep"])
        #expect(jobs[1]["state"] as? String == "scheduled")
        #expect(jobs[1]["queue"] as? String == "other")
        #expect(jobs[0]["priority"] as? Int == 3)
    }

    @Test(arguments: TestStore.all) func statusCountsByQueueAndState(kind: TestStore) async throws {
        let db = try await kind.location()
        try await CLI.run(["enqueue", "sum", "--param", "a=1", "--param", "b=1"], db: db)
        try await CLI.run(
            ["enqueue", "sum", "--param", "a=1", "--param", "b=1", "--queue", "q2", "--delay", "1h"], db: db)
        try await CLI.run(["pause", "q2"], db: db)
        let status = try await CLI.run(["status", "--json"], db: db)
        #expect(status.status == 0)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any])
        let queues = try #require(object["queues"] as? [[String: Any]])
        #expect(queues.map { $0["name"] as? String } == ["default", "q2"])
        #expect((queues[0]["counts"] as? [String: Int])?["ready"] == 1)
        #expect((queues[1]["counts"] as? [String: Int])?["scheduled"] == 1)
        #expect(queues[1]["paused"] as? Bool == true)
        let text = try await CLI.run(["status"], db: db)
        #expect(text.stdout.contains("QUEUE"))
        #expect(text.stdout.contains("no live workers"))
    }

    @Test(arguments: TestStore.all) func operatorCommandsAndTheirExitCodes(kind: TestStore) async throws {
        let db = try await kind.location()
        let id = try await CLI.run(["enqueue", "fail", "--max-attempts", "1"], db: db).stdout.trimmingCharacters(
            in: .whitespacesAndNewlines)
        #expect(try await CLI.run(["work", "--until-empty"], db: db).status == 0)
        #expect(try await Self.job(db, id)["state"] as? String == "dead")
        #expect(try await CLI.run(["cancel", id], db: db).status == 1, "a dead job cannot be cancelled")
        let retry = try await CLI.run(["retry", id], db: db)
        #expect(retry.status == 0)
        #expect(try await Self.job(db, id)["state"] as? String == "ready")
        #expect(try await CLI.run(["cancel", id], db: db).status == 0)
        #expect(try await Self.job(db, id)["state"] as? String == "cancelled")
        let missing = try await CLI.run(["show", "4242"], db: db)
        #expect(missing.status == 3)
        #expect(missing.stderr.contains("no job with id 4242"))
        #expect(try await CLI.run(["cancel", "4242"], db: db).status == 3)
        #expect(try await CLI.run(["retry", "4242"], db: db).status == 3)
        let prune = try await CLI.run(["prune", "--older-than", "0s"], db: db)
        #expect(prune.status == 0)
        #expect(prune.stdout.contains("pruned 1 job(s)"))
        #expect(try await Self.jobs(db).isEmpty)
    }

    @Test func globalDBOptionAndEnvironmentVariable() async throws {
        let store = try TemporaryStore()
        #expect(try await CLI.run(["--db", store.path, "enqueue", "echo", "--payload", "1"], db: nil).status == 0)
        let viaEnv = try await CLI.run(["list", "--json"], db: nil, environment: ["JOBQ_DB": store.path])
        #expect(viaEnv.stdout.split(separator: "\n").count == 1)
    }

    @Test func versionAndHelp() async throws {
        let version = try await CLI.run(["--version"], db: nil)
        #expect(version.status == 0)
        #expect(version.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == JobQVersion.current)
        let help = try await CLI.run(["enqueue", "--help"], db: nil)
        #expect(help.status == 0)
        #expect(help.stdout.contains("--max-attempts"))
    }

    /// Help reads as paragraphs at 80 columns: no prose line ends early where the next line's
    /// first word would have fitted (the source's own line breaks used to leave a word or two
    /// dangling after every line), while example commands keep lines of their own.
    @Test(arguments: [
        ["work"], ["dashboard"], ["workflow"], ["batch"], ["trigger"], ["trigger", "add"], ["emit"],
        ["events"], ["migrate"], ["demo"], ["enqueue"], ["schedule"], []
    ])
    func helpWrapsAsParagraphs(command: [String]) async throws {
        let help = try await CLI.run(command + ["--help"], db: nil, environment: ["COLUMNS": "80"])
        #expect(help.status == 0)
        // The discussion: from the line after OVERVIEW's paragraph to USAGE.
        let lines = help.stdout.components(separatedBy: "\n")
        guard let usage = lines.firstIndex(where: { $0.hasPrefix("USAGE:") }), let blank = lines.firstIndex(of: "")
        else { return }
        let discussion = Array(lines[blank..<usage])
        #expect(discussion.contains { !$0.isEmpty } || command.isEmpty, "\(command) has no discussion")
        for (line, next) in zip(discussion, discussion.dropFirst()) {
            let prose = { (text: String) in !text.isEmpty && !text.hasPrefix("jobq ") && !text.hasPrefix(" ") }
            guard prose(line), prose(next), let word = next.split(separator: " ").first else { continue }
            // ArgumentParser fills lines to 79 columns of 80.
            #expect(
                line.count + 1 + word.count > 79,
                "jobq \(command.joined(separator: " ")) --help breaks early:\n\(line)\n\(next)")
        }
    }

    @Test func demoRunsToCompletion() async throws {
        let store = try TemporaryStore()
        let demoDB = store.directory.appendingPathComponent("demo.sqlite").path
        let result = try await CLI.run(["demo", "--db", demoDB, "--jobs", "60"], db: nil)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("enqueued 60 jobs"))
        #expect(result.stdout.contains("summary after"))
        #expect(result.stdout.contains("succeeded"))
        #expect(result.stdout.contains("dead"))
        #expect(result.stdout.contains("workflow 1 succeeded: 5 steps"), "\(result.stdout)")
        let jobs = try await Self.jobs(demoDB)
        #expect(jobs.count == 60 + 5)
        #expect(jobs.allSatisfy { ["succeeded", "dead"].contains($0["state"] as? String) })
        #expect(jobs.contains { $0["state"] as? String == "succeeded" && ($0["attempt"] as? Int ?? 0) > 1 })

        // The commands it suggests work from where the user stands, though `jobq` is not on PATH.
        let hints = result.stdout.split(separator: "\n").compactMap { line -> String? in
            let text = line.replacingOccurrences(of: "look around:", with: "").trimmingCharacters(in: .whitespaces)
            return text.contains(" --db ") ? text : nil
        }
        #expect(hints.count == 3, "\(result.stdout)")
        #expect(hints.allSatisfy { !$0.hasPrefix("jobq ") }, "jobq is not on the tests' PATH: \(hints)")
        for hint in hints {
            let out = store.directory.appendingPathComponent("hint.out").path
            let shell = try Child(
                executable: URL(fileURLWithPath: "/bin/sh"), arguments: ["-c", hint], environment: [:], stdoutPath: out,
                stderrPath: store.directory.appendingPathComponent("hint.err").path)
            await shell.wait()
            #expect(
                shell.terminationStatus == 0,
                "`\(hint)` failed: \((try? String(contentsOfFile: out, encoding: .utf8)) ?? "")")
        }
    }
}

func parseISO(_ text: String?) -> Date? {
    guard let text else { return nil }
    return try? Date(text, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true))
}

/// `jobq work --until-finished` waits for retries; `--until-empty` does not.
@Suite("Work until finished")
struct WorkUntilFinishedTests {
    @Test func untilFinishedWaitsForRetriesAndUntilEmptyDoesNot() async throws {
        let store = try TemporaryStore()
        let db = store.path
        let flaky = ["enqueue", "fail", "--payload", #"{"succeedFromAttempt": 2}"#]
        let first = try await CLI.run(flaky, db: db).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(try await CLI.run(["work", "--until-empty", "--backoff", "1s"], db: db).status == 0)
        #expect(
            try await CLITests.job(db, first)["state"] as? String == "failed",
            "--until-empty leaves a job waiting for its retry")
        let second = try await CLI.run(flaky, db: db).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(try await CLI.run(["work", "--until-finished", "--backoff", "100ms"], db: db).status == 0)
        for id in [first, second] { #expect(try await CLITests.job(db, id)["state"] as? String == "succeeded") }
        let both = try await CLI.run(["work", "--until-empty", "--until-finished"], db: db)
        #expect(both.status == 2)
        #expect(both.stderr.contains("not both"))
    }
}

/// `--db postgres://...` on the command line (the binary is built with the Postgres trait).
@Suite("jobq command line on PostgreSQL URLs")
struct CLIPostgresURLTests {
    /// A server that is not there: the error names the server and never the password, and the
    /// exit status says the store is unavailable.
    @Test func anUnreachableServerIsReportedWithoutThePassword() async throws {
        let result = try await CLI.run(["status"], db: "postgres://someone:s3cret-pw@127.0.0.1:1/nowhere")
        #expect(result.status != 0)
        #expect(result.stderr.contains("postgres://someone@127.0.0.1:1/nowhere"), "\(result.stderr)")
        #expect(!result.stderr.contains("s3cret-pw") && !result.stdout.contains("s3cret-pw"))
    }

    /// `jobq migrate status` and `up` on a new database: one migration pending, then applied.
    @Test(.enabled(if: PostgresTestServer.available, PostgresTestServer.skipReason))
    func migrateStatusAndUpOnANewDatabase() async throws {
        try await PostgresTestServer.withFreshDatabase { settings in
            try await Self.migrateStatusAndUp(url: settings.description)
        }
    }

    static func migrateStatusAndUp(url: String) async throws {
        let before = try await CLI.run(["migrate", "status", "--json"], db: url)
        #expect(before.status == 0, "\(before.stderr)")
        let status = try #require(try JSONSerialization.jsonObject(with: Data(before.stdout.utf8)) as? [String: Any])
        #expect(
            status["currentVersion"] as? Int == 0
                && (status["pending"] as? [String])?.count == PostgresSchema.latestVersion)
        let dry = try await CLI.run(["migrate", "up", "--dry-run"], db: url)
        #expect(dry.stdout.contains("would apply 0001_create_store.sql"), "\(dry.stdout)\(dry.stderr)")
        let up = try await CLI.run(["migrate", "up"], db: url)
        #expect(up.status == 0 && up.stdout.contains("applied 0001_create_store.sql"), "\(up.stdout)\(up.stderr)")
        let again = try await CLI.run(["migrate", "up"], db: url)
        #expect(again.stdout.contains("nothing to do"))
    }
}
