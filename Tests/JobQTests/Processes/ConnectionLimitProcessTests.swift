import Foundation
import JobQ
import JobQPostgres
import Testing

@testable import JobQCore

/// Forty `jobq work` processes on a server that lets their user have 100 connections (the
/// default `max_connections`) drain a backlog to the end: each opens at most 3 (the default
/// budget), the ones refused wait with backoff and say so once, none crashes or spins, and
/// every job runs once.
///
/// Forty debug-built processes starve the timing-sensitive tests that run beside them, so this
/// one runs alone (``RunsAlone``).
@Suite("PostgreSQL: forty workers against a connection limit")
struct ConnectionLimitProcessTests {
    @Test(RunsAlone.trait)
    func fortyWorkersShareAHundredConnections() async throws {
        guard let url = PostgresTestServer.url else {
            Issue.record("no PostgreSQL server: set JOBQ_TEST_POSTGRES_URL (scripts/postgres.sh start)")
            return
        }
        let admin = try PostgresSettings(url: url)
        let suffix = UUID().uuidString.prefix(8).lowercased()
        let (role, database) = ("jobq_limited_\(suffix)", "jobq_limit_\(suffix)")
        // A role's CONNECTION LIMIT refuses with the same SQLSTATE (53300) as max_connections,
        // without a server of its own; superusers are exempt, so the workers log in as this role.
        try await PostgresTestServer.execute(
            admin, "CREATE ROLE \(role) LOGIN CONNECTION LIMIT 100", "CREATE DATABASE \(database) OWNER \(role)")
        defer {
            Task {
                try? await PostgresTestServer.execute(
                    admin, "DROP DATABASE IF EXISTS \(database) WITH (FORCE)", "DROP ROLE IF EXISTS \(role)")
            }
        }
        var settings = admin
        settings.username = role
        settings.database = database
        let db = settings.description
        let scratch = TestScratch.url("connection-limit")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let jobs = 1200
        let file = scratch.appendingPathComponent("jobs.jsonl")
        try String(repeating: #"{"executor":"sleep","payload":{"seconds":0.05}}"# + "\n", count: jobs)
            .write(to: file, atomically: true, encoding: .utf8)
        let enqueued = try await CLI.run(["enqueue", "--file", file.path], db: db)
        try #require(enqueued.status == 0, "\(enqueued.stderr)")

        let workers = try (0..<40).map { index in
            try CLI.start(
                ["work", "--until-empty", "--concurrency", "2", "--no-scheduler"], db: db,
                stdoutPath: scratch.appendingPathComponent("worker-\(index).out").path,
                stderrPath: scratch.appendingPathComponent("worker-\(index).err").path)
        }
        try await within(.seconds(240), "forty workers to drain \(jobs) jobs") {
            for worker in workers { await worker.wait() }
        }
        var refusedProcesses = 0
        for (index, worker) in workers.enumerated() {
            let log = try String(
                contentsOf: scratch.appendingPathComponent("worker-\(index).err"), encoding: .utf8)
            #expect(worker.terminationStatus == 0, "worker \(index) exited \(worker.terminationStatus): \(log)")
            let refusals = log.components(separatedBy: "\n").filter { $0.contains("refuses new connections") }
            #expect(refusals.count <= 1, "worker \(index) said it \(refusals.count) times: \(refusals)")
            if !refusals.isEmpty { refusedProcesses += 1 }
            #expect(!log.contains("claim failed"), "a refusal waits; it does not fail the claim: \(log)")
        }
        // 40 x 3 > 100: some connects were refused, or the test did not test the limit.
        #expect(refusedProcesses > 0, "no worker was refused a connection")
        let counted = try await CLI.run(["list", "--where", "state:succeeded attempt:1", "--count"], db: db)
        #expect(counted.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "\(jobs)", "\(counted.stderr)")
    }
}
