import Foundation
import JobQPostgres
import Testing

@testable import JobQCore
@testable import JobQSQL
@testable import JobQSQLite

/// Workers on many machines, simulated: separate `jobq work` processes (separate worker ids,
/// connections and pools) sharing one PostgreSQL queue, one of them killed mid-way.
@Suite(
    "PostgreSQL: worker hosts sharing a queue", .serialized,
    .enabled(if: PostgresTestServer.available, PostgresTestServer.skipReason))
struct PostgresHostsTests {
    @Test func threeHostsRunFiveThousandJobsOnceAndTakeOverAKilledHostsJobs() async throws {
        let db = try await TestStore.postgres.location()
        let scratch = try TemporaryStore()
        let count = 5_000
        let file = scratch.directory.appendingPathComponent("jobs.jsonl")
        let line = #"{"executor": "sleep", "payload": {"seconds": 0.004}}"#
        try (Array(repeating: line, count: count).joined(separator: "\n") + "\n").write(
            to: file, atomically: true, encoding: .utf8)
        let enqueued = try await CLI.run(["enqueue", "--file", file.path], db: db)
        try #require(enqueued.status == 0, "\(enqueued.stderr)")

        let arguments = ["work", "--until-empty", "--concurrency", "4", "--lease", "2s", "--backoff", "50ms"]
        let hosts = try (0..<3).map { host in
            try CLI.startDetached(
                arguments, db: db, logPath: scratch.directory.appendingPathComponent("host-\(host).log").path)
        }
        // Kill host 0 once a fifth of the jobs are done: it is then running some and holds
        // more in its buffer.
        let queue = try await JobQueue(postgres: try PostgresSettings(url: db), logger: PostgresTestServer.logger)
        let deadline = Date().addingTimeInterval(120)
        func succeeded() async throws -> Int {
            try await queue.storedRows("SELECT COUNT(*) AS n FROM jobs WHERE state = 'succeeded'").first?["n"] ?? 0
        }
        while try await succeeded() < count / 5 {
            try #require(Date() < deadline, "the hosts made no progress")
            try await pause(0.05)
        }
        kill(hosts[0].processIdentifier, SIGKILL)
        for host in hosts { await host.wait() }
        #expect(hosts[0].terminationReason == .uncaughtSignal)
        for (index, host) in hosts.enumerated().dropFirst() {
            let log =
                (try? String(
                    contentsOfFile: scratch.directory.appendingPathComponent("host-\(index).log").path, encoding: .utf8))
                ?? ""
            #expect(host.terminationStatus == 0, "host \(index): \(log)")
        }

        let states = try await queue.storedRows("SELECT state, COUNT(*) AS n FROM jobs GROUP BY state")
        #expect(states.map { "\($0["state"] as String) \($0["n"] as Int)" } == ["succeeded \(count)"])
        // Each job succeeded once; only the attempts host 0 had started when it died ran twice.
        let successes = try await queue.storedRows(
            "SELECT job_id, COUNT(*) AS n FROM events WHERE kind = 'succeeded' GROUP BY job_id HAVING COUNT(*) > 1")
        #expect(successes.isEmpty, "jobs that succeeded twice: \(successes.map { $0["job_id"] as Int64 })")
        let rerun = try await queue.storedRows("SELECT id FROM jobs WHERE attempt > 1")
        let rerunCount = rerun.count
        #expect(rerunCount <= 4, "only the killed host's running attempts run again: \(rerunCount)")
        let hostsThatWorked = try await queue.storedRows(
            "SELECT COUNT(DISTINCT worker_id) AS n FROM jobs WHERE worker_id IS NOT NULL")
        #expect(hostsThatWorked.first?["n"] as Int? ?? 0 >= 2)
    }
}
