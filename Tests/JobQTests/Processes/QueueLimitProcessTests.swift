import Foundation
import JobQ
import JobQPostgres
import Testing

@testable import JobQCore
@testable import JobQSQL

/// `jobq queue limit` and `jobq queue show` on the real command line, and a concurrency limit
/// held by several `jobq work` processes at once.
@Suite("Queue limits across processes")
struct QueueLimitProcessTests {
    /// Four `jobq work` processes of concurrency 8 on a queue limited to 3, each job sleeping
    /// 100 ms: from the jobs' recorded start and finish times, never more than 3 ran at once,
    /// and every job succeeded. Then the limit is removed and `status` and `queue show` say so.
    @Test(arguments: TestStore.all) func fourWorkersNeverRunMoreThanTheLimit(store: TestStore) async throws {
        let db = try await store.location()
        let scratch = TestScratch.url("queue-limit")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let file = scratch.appendingPathComponent("jobs.jsonl")
        let line = #"{"executor": "sleep", "payload": {"seconds": 0.1}, "queue": "limited"}"#
        try (Array(repeating: line, count: 24).joined(separator: "\n") + "\n").write(
            to: file, atomically: true, encoding: .utf8)
        let enqueued = try await CLI.run(["enqueue", "--file", file.path], db: db)
        try #require(enqueued.status == 0, "\(enqueued.stderr)")
        let limited = try await CLI.run(["queue", "limit", "limited", "--concurrency", "3"], db: db)
        #expect(limited.status == 0 && limited.stdout.contains("3 at once"), "\(limited.stderr)")

        let workers = try (0..<4).map { index in
            try CLI.startDetached(
                ["work", "--queue", "limited", "--until-empty", "--concurrency", "8", "--no-scheduler"], db: db,
                logPath: scratch.appendingPathComponent("worker-\(index).log").path)
        }
        for worker in workers {
            await worker.wait()
            #expect(worker.terminationStatus == 0)
        }

        let queue: JobQueue =
            switch store {
            case .sqlite: try JobQueue(path: db)
            case .postgres:
                try await JobQueue(postgres: try PostgresSettings(url: db), logger: PostgresTestServer.logger)
            }
        let jobs = try await queue.jobs(matching: JobQuery(queue: "limited", limit: 100))
        #expect(jobs.count == 24 && jobs.allSatisfy { $0.state == .succeeded })
        let most = jobs.mostAtOnce
        let intervals = jobs.map {
            "\($0.id) \($0.startedAt?.timeIntervalSince1970 ?? 0)-\($0.finishedAt?.timeIntervalSince1970 ?? 0)"
        }
        #expect(most <= 3, "\(most) ran at once: \(intervals)")
        #expect(most >= 2, "the workers ran side by side (\(most) at most)")

        let shown = try await CLI.run(["queue", "show", "limited"], db: db)
        #expect(shown.status == 0 && shown.stdout.contains("3 at once") && shown.stdout.contains("succeeded"))
        let removed = try await CLI.run(["queue", "limit", "limited", "--concurrency", "none"], db: db)
        #expect(removed.status == 0 && removed.stdout.contains("no limits"))
        let status = try await CLI.run(["status", "--json"], db: db)
        #expect(status.status == 0 && !status.stdout.contains("\"concurrency\""), "\(status.stdout)")
    }

    /// Bad input: a limit that is no number of 1 or more, and a queue that does not exist,
    /// are refused with a message and a non-zero exit, and the limit stays as it was.
    @Test func badLimitsAndUnknownQueuesAreRefused() async throws {
        let store = try TemporaryStore()
        let db = store.path
        #expect(try await CLI.run(["queue", "limit", "q", "--concurrency", "2"], db: db).status == 0)
        for bad in ["0", "-1", "many", "2.5"] {
            let result = try await CLI.run(["queue", "limit", "q", "--concurrency=\(bad)"], db: db)
            #expect(result.status == 2 && result.stderr.contains("--concurrency \(bad)"), "\(bad): \(result.stderr)")
        }
        let shown = try await CLI.run(["queue", "show", "q"], db: db)
        #expect(shown.stdout.contains("2 at once") && !shown.stdout.contains("/1m"), "\(shown.stdout)")
        let badOptions: [([String], String)] = [
            (["--rate", "100"], "--rate"), (["--rate", "0/1m"], "1 or more"), (["--rate", "5/2d"], "1ms to 1d"),
            (["--partition-by", "customer"], "JSON pointer"), (["--partition-by", "/items/0"], "array index"),
            ([], "give --concurrency, --rate or --partition-by")
        ]
        for (options, message) in badOptions {
            let result = try await CLI.run(["queue", "limit", "q"] + options, db: db)
            #expect(result.status == 2 && result.stderr.contains(message), "\(options): \(result.stderr)")
        }
        let partitioned = try await CLI.run(
            ["queue", "limit", "q", "--rate", "100/1m", "--partition-by", "/customer"], db: db)
        #expect(partitioned.stdout.contains("2 at once, 100/1m per /customer"), "\(partitioned.stdout)")
        let unknown = try await CLI.run(["queue", "show", "nope"], db: db)
        #expect(unknown.status == 3 && unknown.stderr.contains("no queue nope"), "\(unknown.stderr)")
    }

    /// A worker killed while it holds a limited queue's places holds them until their leases
    /// expire and another worker reclaims the jobs: the queue never has more than its limit
    /// running (sampled throughout), the second worker runs the jobs after that, and each
    /// ends once.
    @Test func aKilledWorkersJobsHoldTheirPlacesUntilTheirLeasesExpire() async throws {
        let store = try TemporaryStore()
        let db = store.path
        let file = store.directory.appendingPathComponent("jobs.jsonl")
        let line = #"{"executor": "sleep", "payload": {"seconds": 0.4}, "queue": "limited"}"#
        try (Array(repeating: line, count: 4).joined(separator: "\n") + "\n").write(
            to: file, atomically: true, encoding: .utf8)
        try #require(try await CLI.run(["enqueue", "--file", file.path], db: db).status == 0)
        try #require(try await CLI.run(["queue", "limit", "limited", "--concurrency", "2"], db: db).status == 0)
        let queue = try JobQueue(path: db)
        func running() async throws -> Int {
            try await queue.status().queues.first { $0.name == "limited" }?.counts["running"] ?? 0
        }
        // Renewed every third of the lease, a lease outlives the kill by at least two thirds of
        // it (2 s), and the window checked below is 1.5 s (with a 1 s lease and a 0.8 s window a
        // loaded run once saw a place given away in time).
        let arguments = ["work", "--queue", "limited", "--lease", "3s", "--concurrency", "4", "--no-scheduler"]
        let first = try CLI.startDetached(
            arguments, db: db, logPath: store.directory.appendingPathComponent("a.log").path)
        let deadline = Date().addingTimeInterval(15)
        while try await running() < 2, Date() < deadline { try await pause(0.02) }
        try #require(try await running() == 2, "the first worker never ran its two")
        kill(first.processIdentifier, SIGKILL)
        await first.wait()
        let second = try CLI.startDetached(
            arguments + ["--until-empty"], db: db, logPath: store.directory.appendingPathComponent("b.log").path)
        var most = 0
        var heldWhileLeased = true
        let killedAt = Date()
        func succeeded() async throws -> Int {
            try await queue.status().queues.first { $0.name == "limited" }?.counts["succeeded"] ?? 0
        }
        while try await succeeded() < 4, Date() < deadline.addingTimeInterval(15) {
            let now = try await running()
            most = max(most, now)
            // Within the lease the dead worker's two still hold the places: nothing else starts.
            if Date().timeIntervalSince(killedAt) < 1.5, now != 2 { heldWhileLeased = false }
            try await pause(0.02)
        }
        await second.wait()
        #expect(second.terminationStatus == 0)
        #expect(most <= 2, "\(most) ran at once")
        #expect(heldWhileLeased, "the killed worker's places were given away before its leases expired")
        let jobs = try await queue.jobs(matching: JobQuery(queue: "limited", limit: 10))
        #expect(jobs.count == 4 && jobs.allSatisfy { $0.state == .succeeded }, "\(jobs.map(\.state))")
        let log =
            (try? String(contentsOfFile: store.directory.appendingPathComponent("b.log").path, encoding: .utf8)) ?? ""
        #expect(log.contains("reclaimed"), "the second worker reclaimed the dead worker's jobs")
    }
}
