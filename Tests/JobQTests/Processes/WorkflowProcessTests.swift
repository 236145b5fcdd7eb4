import Foundation
import Testing

@testable import JobQCore
@testable import JobQSQL
@testable import JobQSQLite

/// Dependencies, workflows and lanes through the real `jobq` binary and several processes.
@Suite("Workflows across processes", .serialized)
struct WorkflowProcessTests {
    static func write(_ text: String, to name: String, in store: TemporaryStore) throws -> String {
        let path = store.directory.appendingPathComponent(name).path
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    @Test func badDependenciesAndWorkflowsExitTwoAndStoreNothing() async throws {
        let store = try TemporaryStore()
        let db = store.path
        let dead = try await CLI.run(["enqueue", "fail", "--max-attempts", "1"], db: db).stdout.trimmingCharacters(
            in: .whitespacesAndNewlines)
        #expect(try await CLI.run(["work", "--until-empty"], db: db).status == 0)
        let refused: [([String], String)] = [
            (["enqueue", "sum", "--after", "999"], "dependency 999 does not exist"),
            // The id the new job itself would get: nothing can wait for a job that does not exist yet, so no cycle forms.
            (["enqueue", "sum", "--after", "2"], "dependency 2 does not exist"),
            (["enqueue", "sum", "--after", dead], "dependency \(dead) is already dead"),
            (["enqueue", "sum", "--after", "\(dead):fail"], "already dead"),
            (["enqueue", "sum", "--after", "x"], "--after 'x'"),
            (["enqueue", "sum", "--after", "\(dead):sometimes"], "unknown dependency policy 'sometimes'"),
            (["enqueue", "sum", "--on-dependency-failure", "maybe"], "unknown dependency policy"),
            (["enqueue", "sum", "--lane-on-failure", "halt"], "--lane-on-failure needs --lane")
        ]
        for (arguments, message) in refused {
            let result = try await CLI.run(arguments, db: db)
            #expect(result.status == 2, "\(arguments) exits 2, got \(result.status): \(result.stderr)")
            #expect(result.stderr.contains(message), "\(arguments): \(result.stderr)")
        }
        let file = try Self.write(
            #"{"sequence": [{"executor": "sum"}, {"parallel": [{"executor": "echo"}, {"executor": "sm"}]}]}"#,
            to: "bad.json", in: store)
        let bad = try await CLI.run(["workflow", "submit", file], db: db)
        #expect(bad.status == 2)
        #expect(bad.stderr.contains("$.sequence[1].parallel[1].executor: unknown executor 'sm'"), "\(bad.stderr)")
        #expect(try await CLITests.jobs(db).count == 1, "nothing was stored")
        #expect(try await CLI.run(["workflow", "list", "--json"], db: db).stdout.isEmpty)
        #expect(try await CLI.run(["workflow", "show", "7"], db: db).status == 3)
        #expect(try await CLI.run(["workflow", "cancel", "7"], db: db).status == 3)
        #expect(try await CLI.run(["lane", "show", "nope"], db: db).status == 3)

        // Accepted with ignore: it runs once its dependency is final (it is).
        let ignored = try await CLI.run(
            ["enqueue", "sum", "--param", "a=1", "--param", "b=1", "--after", "\(dead):ignore", "--json"], db: db)
        #expect(ignored.status == 0)
        #expect(ignored.stdout.contains("\"state\":\"ready\""))
    }

    @Test func aWorkflowFileRunsAndWaitReportsItsOutcome() async throws {
        let store = try TemporaryStore()
        let db = store.path
        let good = try Self.write(
            """
            {"name": "ok", "context": {"who": "ops"}, "sequence": [
              {"executor": "sum", "payload": {"a": 1, "b": 2}, "name": "first"},
              {"parallel": [{"executor": "sleep", "payload": {"seconds": 0.1}}, {"executor": "sum", "payload": {"a": 2, "b": 2}}], "name": "fan"},
              {"executor": "echo", "payload": {}, "input": "previous", "name": "last"}]}
            """, to: "good.json", in: store)
        let bad = try Self.write(
            #"{"sequence": [{"executor": "fail", "payload": {"message": "nope"}, "maxAttempts": 1}, {"executor": "sum"}]}"#,
            to: "fail.json", in: store)
        let goodID = try await CLI.run(["workflow", "submit", good, "--context", #"{"run": 1}"#], db: db).stdout
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let badID = try await CLI.run(["workflow", "submit", bad], db: db).stdout.trimmingCharacters(
            in: .whitespacesAndNewlines)
        let status = try await CLI.run(["status"], db: db).stdout
        #expect(status.contains("WAITING") && status.contains("2 running workflow(s)"), "\(status)")

        let worker = try CLI.startDetached(
            ["work"], db: db, logPath: store.directory.appendingPathComponent("w.log").path)
        defer { kill(worker.processIdentifier, SIGKILL) }
        let waited = try await CLI.run(["wait", "--workflow", goodID, "--timeout", "30s"], db: db)
        #expect(waited.status == 0, "\(waited.stdout) \(waited.stderr)")
        #expect(waited.stdout.contains("workflow \(goodID) succeeded"))
        let failed = try await CLI.run(["wait", "--workflow", badID, "--timeout", "30s"], db: db)
        #expect(failed.status == 1)
        #expect(failed.stdout.contains("nope"))

        let shown = try await CLI.run(["workflow", "show", goodID], db: db).stdout
        #expect(shown.contains("parallel \"fan\" $.sequence[1]  succeeded  2/2 done"), "\(shown)")
        #expect(shown.contains(#"context: {"run":1,"who":"ops"}"#), "\(shown)")
        #expect(shown.contains(#"{"previous":[{"slept":0.1},{"sum":4}]}"#), "\(shown)")
        let json = try await CLI.run(["workflow", "show", goodID, "--json"], db: db).stdout
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        #expect(object["state"] as? String == "succeeded")
        let list = try await CLI.run(["workflow", "list", "--state", "failed"], db: db).stdout
        #expect(list.contains("\(badID) ") && !list.contains("ok"), "\(list)")
        #expect(
            try await CLI.run(["workflow", "cancel", goodID], db: db).status == 1,
            "a finished workflow cannot be cancelled")
        let events = try await CLI.run(["events", "--workflow", goodID, "--kind", "workflow", "--json"], db: db).stdout
        #expect(events.split(separator: "\n").count == 1)
        let timedOut = try await CLI.run(
            [
                "workflow", "submit",
                try Self.write(
                    #"{"sequence": [{"executor": "sleep", "payload": {"seconds": 30}}]}"#, to: "slow.json", in: store)
            ],
            db: db
        ).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(try await CLI.run(["wait", "--workflow", timedOut, "--timeout", "200ms"], db: db).status == 124)
        #expect(try await CLI.run(["workflow", "cancel", timedOut], db: db).status == 0)
        #expect(try await CLI.run(["wait", "--workflow", timedOut, "--timeout", "5s"], db: db).status == 1)
    }

    @Test func aWorkerKilledMidWorkflowIsReplacedAndTheWorkflowCompletesOnce() async throws {
        let store = try TemporaryStore()
        let db = store.path
        let ran = store.directory.appendingPathComponent("ran.log").path
        func step(_ name: String, _ seconds: Double) -> String {
            #"{"executor": "shell", "name": "\#(name)", "payload": {"script": "echo \#(name) >> \#(ran); sleep \#(seconds)"}}"#
        }
        let file = try Self.write(
            """
            {"sequence": [\(step("a", 0)), {"parallel": [\(step("b", 4)), \(step("c", 0))]}, \(step("d", 0)), \(step("e", 0))]}
            """, to: "wf.json", in: store)
        let id = try await CLI.run(["workflow", "submit", file], db: db).stdout.trimmingCharacters(
            in: .whitespacesAndNewlines)
        let workerA = try CLI.startDetached(
            ["work", "--lease", "1s"], db: db, logPath: store.directory.appendingPathComponent("a.log").path)
        // Killed while b runs, once a and c are recorded (a step whose success was not committed
        // yet would run again, which is at-least-once delivery, not what this test is about).
        try await EventProcessTests.waitFor("step b to run, a and c to succeed") {
            let succeeded = try await EventProcessTests.events(db, ["--workflow", id, "--kind", "succeeded"])
            return succeeded.count == 2 && ((try? String(contentsOfFile: ran, encoding: .utf8)) ?? "").contains("b\n")
        }
        kill(workerA.processIdentifier, SIGKILL)
        await workerA.wait()
        let workerB = try await CLI.run(["work", "--until-empty", "--lease", "1s"], db: db)
        #expect(workerB.status == 0, "\(workerB.stderr)")
        let workflow = try await CLI.run(["wait", "--workflow", id, "--timeout", "10s"], db: db)
        if workflow.status != 0 {
            // What each step is left in, and what the second worker said, for the failure below.
            let steps = try await JobQueue(path: db).jobs(matching: JobQuery(limit: 20)).map {
                "\($0.name ?? "?"): \($0.state.rawValue) attempt \($0.attempt)/\($0.maxAttempts) runAt \($0.runAt.timeIntervalSince1970) startedAt \($0.startedAt?.timeIntervalSince1970 ?? 0) error \($0.error ?? "-")"
            }
            Issue.record("steps: \(steps)\nworker B:\n\(workerB.stderr)")
        }
        #expect(workflow.status == 0, "\(workflow.stdout)")
        let lines = ((try? String(contentsOfFile: ran, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
        for name in ["a", "c", "d", "e"] {
            #expect(lines.filter { $0 == name }.count == 1, "\(name) ran once: \(lines)")
        }
        #expect(lines.filter { $0 == "b" }.count == 2, "the killed step ran again: \(lines)")
        #expect(
            (lines.firstIndex(of: "d") ?? -1) > (lines.lastIndex(of: "b") ?? Int.max), "d waited for the rerun of b")
        let succeeded = try await EventProcessTests.events(db, ["--workflow", id, "--kind", "succeeded"])
        #expect(succeeded.count == 5, "each step succeeded once")
        #expect(Set(succeeded.compactMap { $0["jobId"] as? Int }).count == 5)
        #expect(try await EventProcessTests.events(db, ["--workflow", id, "--kind", "workflow"]).count == 1)
    }

    @Test func aLaneFedByTwoProducersRunsOneAtATimeInAppendOrderAcrossTwoWorkers() async throws {
        let store = try TemporaryStore()
        let db = store.path
        // No-op jobs (no child process each): the test is about order, and the machine is shared
        // with the other suites' workers.
        let line = #"{"executor": "sum", "lane": "L", "payload": {"a": 1, "b": 1}}"#
        // Two producers, each appending 100 jobs in four files, at the same time as the workers run.
        var producers: [Child] = []
        for producer in 0..<2 {
            var script = ""
            for chunk in 0..<4 {
                let path = try Self.write(
                    Array(repeating: line, count: 25).joined(separator: "\n"), to: "p\(producer)-\(chunk).jsonl",
                    in: store)
                script +=
                    "\(CLI.binary.path) --db \(db) enqueue --file \(path) >> \(store.directory.path)/acked-\(producer) || exit 1\n"
            }
            producers.append(
                try Child(
                    executable: URL(fileURLWithPath: "/bin/sh"), arguments: ["-c", script], environment: [:],
                    stdoutPath: store.directory.appendingPathComponent("p\(producer).out").path,
                    stderrPath: store.directory.appendingPathComponent("p\(producer).err").path))
        }
        let workers = try (0..<2).map { index in
            try CLI.startDetached(
                ["work", "--concurrency", "4"], db: db,
                logPath: store.directory.appendingPathComponent("w\(index).log").path)
        }
        defer { for worker in workers { kill(worker.processIdentifier, SIGKILL) } }
        for producer in producers {
            await producer.wait()
            #expect(producer.terminationStatus == 0)
        }
        let acked = try (0..<2).flatMap { producer in
            try String(
                contentsOfFile: store.directory.appendingPathComponent("acked-\(producer)").path, encoding: .utf8
            )
            .split(separator: "\n").compactMap { Int($0) }
        }
        #expect(acked.count == 200)
        var jobs: [[String: Any]] = []
        try await EventProcessTests.waitFor("the lane to drain", timeout: 60) {
            let lines = try await CLI.run(["lane", "show", "L", "--json"], db: db).stdout.split(separator: "\n")
                .dropFirst()
            jobs = try lines.map {
                try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
            }
            return jobs.count == 200 && jobs.allSatisfy { $0["state"] as? String == "succeeded" }
        }
        #expect(jobs.compactMap { $0["id"] as? Int }.sorted() == acked.sorted(), "the lane holds every appended job")
        // Each job started after the one appended before it finished (ids are the append order).
        for (earlier, later) in zip(jobs, jobs.dropFirst()) {
            let finished = try #require(parseISO(earlier["finishedAt"] as? String))
            let started = try #require(parseISO(later["startedAt"] as? String))
            #expect(started >= finished, "job \(later["id"]!) started before job \(earlier["id"]!) finished")
        }
        let drained = try await EventProcessTests.events(db, ["--kind", "lane"])
        #expect(
            !drained.isEmpty && drained.allSatisfy { ($0["data"] as? [String: Any])?["state"] as? String == "drained" })
        let shown = try await CLI.run(["lane", "show", "L"], db: db).stdout
        #expect(shown.contains("lane L: on failure continue"))
    }
}
