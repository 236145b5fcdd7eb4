import Foundation
import Testing

@testable import JobQCore
@testable import JobQSQL
@testable import JobQSQLite

/// Job trees through the real `jobq` binary: files, drawing, SIGKILL mid-level, two workers.
@Suite("Job trees across processes", .serialized)
struct TreeProcessTests {
    /// The jobs of a `workflow show --json` group and its groups, with the group each is in.
    static func jobs(in group: [String: Any]) -> [(job: [String: Any], group: [String: Any])] {
        (group["members"] as? [[String: Any]] ?? []).flatMap { member -> [(job: [String: Any], group: [String: Any])] in
            if let job = member["job"] as? [String: Any] { return [(job, group)] }
            if let child = member["group"] as? [String: Any] { return jobs(in: child) }
            return []
        }
    }

    static func workflow(_ db: String, _ id: String) async throws -> [String: Any] {
        let shown = try await CLI.run(["workflow", "show", id, "--json"], db: db)
        try #require(shown.status == 0, "\(shown.stderr)")
        return try #require(try JSONSerialization.jsonObject(with: Data(shown.stdout.utf8)) as? [String: Any])
    }

    @Test func aTreeFileRunsIsDrawnAndBadOnesExitTwo() async throws {
        let store = try TemporaryStore()
        let db = store.path
        let bad = try WorkflowProcessTests.write(
            #"{"tree": {"executor": "echo", "children": [{"executor": "echo", "name": "x", "each": "/a"}, {"executor": "sum", "name": "x"}]}}"#,
            to: "bad.json", in: store)
        let refused = try await CLI.run(["workflow", "submit", bad], db: db)
        #expect(refused.status == 2)
        #expect(
            refused.stderr.contains("$.tree.children[1].name: two children of 'echo' are named 'x'"),
            "\(refused.stderr)")
        #expect(try await CLITests.jobs(db).isEmpty, "nothing was stored")

        let file = try WorkflowProcessTests.write(
            """
            {"name": "pages", "tree": {"executor": "echo", "name": "book", "payload": {"pages": [{"words": [1, 2]}, {"words": [3]}, {"words": []}]},
              "children": [{"executor": "echo", "name": "page", "each": "/pages",
                "children": [{"executor": "echo", "name": "word", "each": "/words", "with": {"lang": "en"}}]}]}}
            """, to: "tree.json", in: store)
        let id = try await CLI.run(["workflow", "submit", file], db: db).stdout.trimmingCharacters(
            in: .whitespacesAndNewlines)
        let before = try await CLI.run(["workflow", "show", id], db: db).stdout
        #expect(before.contains("tree book  running  1 of at most 100000 jobs"), "\(before)")
        #expect(before.contains("└─ book  1 job: 0 done, 1 to run"), "\(before)")
        #expect(before.contains("└─ word  each /words  no jobs yet"), "\(before)")
        #expect(try await CLI.run(["work", "--until-empty"], db: db).status == 0)
        let waited = try await CLI.run(["wait", "--workflow", id, "--timeout", "10s"], db: db)
        #expect(waited.status == 0, "\(waited.stdout)\(waited.stderr)")
        let after = try await CLI.run(["workflow", "show", id], db: db).stdout
        #expect(after.contains("└─ page  each /pages  3 jobs: 3 done"), "\(after)")
        #expect(after.contains("└─ word  each /words  3 jobs: 3 done"), "\(after)")
        let jobs = try await CLI.run(["workflow", "show", id, "--jobs"], db: db).stdout
        #expect(jobs.contains(#"echo "word"  succeeded"#), "\(jobs)")
        #expect(jobs.contains(#"{"input":3,"lang":"en"}"#))
        let treeEvents = try await EventProcessTests.events(db, ["--workflow", id, "--kind", "tree"])
        #expect(treeEvents.count == 1)
        #expect((treeEvents.first?["data"] as? [String: Any])?["state"] as? String == "succeeded")
        #expect(
            try await EventProcessTests.events(db, ["--workflow", id, "--kind", "subtree"]).count == 4,
            "3 pages and the book")
    }

    @Test func aWorkerKilledHalfWayThroughALevelNeitherLosesNorDoublesChildren() async throws {
        let store = try TemporaryStore()
        let db = store.path
        let naps = (0..<30).map { _ in #"{"seconds": 0.15}"# }.joined(separator: ",")
        let file = try WorkflowProcessTests.write(
            """
            {"tree": {"executor": "echo", "payload": {"naps": [\(naps)]},
              "children": [{"executor": "sleep", "name": "nap", "each": "/naps", "children": [{"executor": "echo", "name": "note"}]}]}}
            """, to: "tree.json", in: store)
        let id = try await CLI.run(["workflow", "submit", file], db: db).stdout.trimmingCharacters(
            in: .whitespacesAndNewlines)
        let workerA = try CLI.startDetached(
            ["work", "--lease", "1s", "--concurrency", "4"], db: db,
            logPath: store.directory.appendingPathComponent("a.log").path)
        try await EventProcessTests.waitFor("a third of the naps to succeed") {
            let succeeded = try await EventProcessTests.events(db, ["--workflow", id, "--kind", "succeeded"])
            return succeeded.filter { $0["executor"] as? String == "sleep" }.count >= 10
        }
        kill(workerA.processIdentifier, SIGKILL)
        await workerA.wait()
        let workerB = try CLI.startDetached(
            ["work", "--lease", "1s", "--concurrency", "4"], db: db,
            logPath: store.directory.appendingPathComponent("b.log").path)
        let waited = try await CLI.run(["wait", "--workflow", id, "--timeout", "60s"], db: db)
        kill(workerB.processIdentifier, SIGTERM)
        await workerB.wait()
        #expect(waited.status == 0, "\(waited.stdout)\(waited.stderr)")

        let workflow = try await Self.workflow(db, id)
        #expect(workflow["state"] as? String == "succeeded")
        let all = Self.jobs(in: try #require(workflow["root"] as? [String: Any]))
        let napJobs = all.filter { $0.job["name"] as? String == "nap" }
        #expect(napJobs.count == 30)
        for nap in napJobs {
            // Each nap's group holds the nap and the one note its success created.
            let members = (nap.group["members"] as? [[String: Any]] ?? []).compactMap { $0["job"] as? [String: Any] }
            #expect(members.count == 2, "nap \(nap.job["id"] ?? "?") has exactly one note: \(members.count - 1)")
            #expect(members.last?["name"] as? String == "note")
        }
        #expect(all.count == 61)
        #expect(all.allSatisfy { $0.job["state"] as? String == "succeeded" })
        #expect(try await EventProcessTests.events(db, ["--workflow", id, "--kind", "tree"]).count == 1)
        #expect(try await EventProcessTests.events(db, ["--workflow", id, "--kind", "workflow"]).count == 1)
    }

    @Test func twoWorkerProcessesRunATreeOfTwoThousandLeaves() async throws {
        let store = try TemporaryStore()
        let db = store.path
        // Leaves sleep 5 ms each, so that the tree lasts long enough for both workers to matter.
        let pages = (0..<40).map { page in
            "{\"words\": [" + (0..<50).map { "{\"seconds\": 0.005, \"n\": \(page * 50 + $0)}" }.joined(separator: ",")
                + "]}"
        }
        let file = try WorkflowProcessTests.write(
            """
            {"tree": {"executor": "echo", "payload": {"pages": [\(pages.joined(separator: ","))]},
              "children": [{"executor": "echo", "name": "page", "each": "/pages",
                "children": [{"executor": "sleep", "name": "word", "each": "/words"}]}]}}
            """, to: "tree.json", in: store)
        #expect(try await CLI.run(["migrate", "up"], db: db).status == 0)
        let logs = (0..<2).map { store.directory.appendingPathComponent("w\($0).log").path }
        let workers = try logs.map { log in try CLI.startDetached(["work", "--concurrency", "4"], db: db, logPath: log)
        }
        try await EventProcessTests.waitFor("both workers to start") {
            logs.allSatisfy { ((try? String(contentsOfFile: $0, encoding: .utf8)) ?? "").contains("worker started") }
        }
        let id = try await CLI.run(["workflow", "submit", file], db: db).stdout.trimmingCharacters(
            in: .whitespacesAndNewlines)
        let waited = try await CLI.run(["wait", "--workflow", id, "--timeout", "120s"], db: db)
        for worker in workers {
            kill(worker.processIdentifier, SIGTERM)
            await worker.wait()
        }
        #expect(waited.status == 0, "\(waited.stdout)\(waited.stderr)")
        let jobs = try await CLITests.jobs(db)
        #expect(jobs.count == 2041)
        #expect(
            jobs.allSatisfy { $0["state"] as? String == "succeeded" && $0["attempt"] as? Int == 1 }, "each ran once")
        let words = jobs.filter { $0["name"] as? String == "word" }.compactMap {
            ($0["payload"] as? [String: Any])?["n"] as? Int
        }
        #expect(Set(words) == Set(0..<2000), "each leaf got its own element")
        let started = try await EventProcessTests.events(db, ["--workflow", id, "--kind", "started"])
        let byWorker = Dictionary(grouping: started) { ($0["data"] as? [String: Any])?["worker"] as? String ?? "?" }
        #expect(byWorker.count == 2, "both workers ran jobs: \(byWorker.mapValues(\.count))")
        #expect(try await EventProcessTests.events(db, ["--workflow", id, "--kind", "tree"]).count == 1)
        #expect(try await EventProcessTests.events(db, ["--workflow", id, "--kind", "subtree"]).count == 41)
        print("tree of 2,000 leaves on two workers: \(byWorker.mapValues(\.count)) jobs started per worker")
    }
}
