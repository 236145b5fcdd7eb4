import Foundation
import JobQ
import JobQPostgres
import Logging
import Synchronization
import Testing

@testable import JobQCore

/// The PostgreSQL server goes away under a fleet at work: restarted (`pg_ctl restart -m fast`,
/// every session ended), or stopped for 30 s and started again. Two `jobq work` processes drain
/// a backlog of shell jobs that each append their id to a file (and, for the stop, two that run
/// through it, their leases running out), while a producer in this process
/// enqueues more through the API. They all carry on: every job the producer was told was
/// enqueued runs, no job runs twice, the drain finishes, the workers exit 0 when asked, and each
/// process says what happened once (an outage warning and a `notice` that the server is back),
/// with no error lines. Runs alone (``RunsAlone``): a server and three busy processes of its own.
@Suite("PostgreSQL: the server restarts under the workers")
struct ServerRestartProcessTests {
    enum Outage: String, CustomTestStringConvertible {
        case restart
        case stoppedThirtySeconds
        var testDescription: String { rawValue }
    }

    @Test(
        RunsAlone.trait, .enabled(if: PostgresTestServer.available, PostgresTestServer.skipReason),
        arguments: [Outage.restart, .stoppedThirtySeconds])
    func workersAndProducersCarryOnAcrossTheOutage(_ outage: Outage) async throws {
        let cluster = try await PrivatePostgresCluster.start()
        defer { Task { await cluster.stop() } }
        let db = cluster.url
        let scratch = TestScratch.url("server-\(outage.rawValue)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        let runs = scratch.appendingPathComponent("runs.txt").path
        let payload = #"{"argv":["sh","-c","echo $JOBQ_JOB_ID >> \#(runs); sleep 0.02"]}"#
        let job = #"{"executor":"shell","payload":\#(payload)}"#
        // First, while the server is stopped for 30 s, two jobs still run (36 s each) whose 10 s
        // leases run out meanwhile: no worker may take them over once the server is back.
        let long = #"{"executor":"shell","payload":{"argv":["sh","-c","echo $JOBQ_JOB_ID >> \#(runs); sleep 36"]}}"#
        let backlog = 1200
        let file = scratch.appendingPathComponent("jobs.jsonl")
        try
            (String(repeating: long + "\n", count: outage == .stoppedThirtySeconds ? 2 : 0)
            + String(repeating: job + "\n", count: backlog)).write(to: file, atomically: true, encoding: .utf8)
        let enqueued = try await CLI.run(["enqueue", "--file", file.path], db: db)
        try #require(enqueued.status == 0, "\(enqueued.stderr)")

        let workers = try (0..<2).map { index in
            try CLI.start(
                // Leases of 10 s run out while the server is stopped: they are renewed, and the
                // outcomes held are written, before any worker reclaims them.
                ["work", "--allow-shell", "--concurrency", "4", "--no-scheduler", "--lease", "10s"], db: db,
                stdoutPath: scratch.appendingPathComponent("worker-\(index).out").path,
                stderrPath: scratch.appendingPathComponent("worker-\(index).err").path)
        }
        // A producer in this process: one job at a time, 10 ms apart, until told to stop; the ids
        // it was given are acknowledged.
        let logs = LogRecorder()
        logs.logLevel = .warning
        let producerQueue = try await JobQueue(
            postgres: try PostgresSettings(url: db), logger: Logger(label: "producer") { _ in logs })
        let producing = Atomic<Bool>(true)
        let producer = Task { () -> (acknowledged: [Int64], failures: [String]) in
            var acknowledged: [Int64] = []
            var failures: [String] = []
            let request = try JobRequest(executor: "shell", payloadJSON: payload)
            while producing.load(ordering: .relaxed) {
                do {
                    acknowledged.append(try await producerQueue.enqueue(request).id)
                } catch {
                    // Not acknowledged: the job may or may not have been written; it is checked
                    // like every other job in the store (run once), not as acknowledged.
                    failures.append("\(error)")
                }
                try await Task.sleep(for: .milliseconds(10))
            }
            return (acknowledged, failures)
        }

        @Sendable func ranCount() -> Int {
            ((try? String(contentsOfFile: runs, encoding: .utf8)) ?? "").split(separator: "\n").count
        }
        try await eventually(.seconds(60), "the drain to get under way") { ranCount() >= 200 }
        switch outage {
        case .restart:
            try await cluster.restart()
        case .stoppedThirtySeconds:
            try await cluster.halt()
            try await Task.sleep(for: .seconds(30))
            try await cluster.resume()
        }
        try await Task.sleep(for: .seconds(1))
        producing.store(false, ordering: .relaxed)
        let produced = try await producer.value
        #expect(produced.acknowledged.count > 20, "the producer went on after the outage: \(produced.failures)")

        // Every job in the store ends, each having run once.
        @Sendable func count(_ filter: String?) async throws -> Int {
            let result = try await CLI.run(["list", "--count"] + (filter.map { ["--where", $0] } ?? []), db: db)
            try #require(result.status == 0, "\(result.stderr)")
            return Int(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
        }
        let total = try await count(nil)
        do {
            try await within(.seconds(180), "the drain to finish") {
                while try await count("state:succeeded") < total { try await Task.sleep(for: .milliseconds(500)) }
            }
        } catch {
            // What held the drain up, for whoever reads the failure: the store's counts, the
            // jobs not done, and the end of each worker's log.
            var report = ["jobq status:", (try? await CLI.run(["status"], db: db).stdout) ?? "?"]
            for state in ["ready", "running", "scheduled", "failed", "dead", "cancelled", "waiting"] {
                let listed = try? await CLI.run(["list", "--state", state, "--limit", "20"], db: db)
                report.append("\(state): \(listed?.stdout ?? "?")")
            }
            for index in 0..<2 {
                let log =
                    (try? String(
                        contentsOfFile: scratch.appendingPathComponent("worker-\(index).err").path, encoding: .utf8))
                    ?? ""
                report.append(
                    "worker \(index) (last 40 lines):\n" + log.split(separator: "\n").suffix(40).joined(separator: "\n")
                )
            }
            report.append("producer's warnings: \(logs.messages.suffix(20))")
            let text = "the drain did not finish: \(error)\n" + report.joined(separator: "\n")
            Issue.record(Comment(rawValue: text))
            throw error
        }
        for worker in workers { kill(worker.processIdentifier, SIGTERM) }
        for worker in workers { await worker.wait() }

        let ran = ((try? String(contentsOfFile: runs, encoding: .utf8)) ?? "").split(separator: "\n").compactMap {
            Int64($0)
        }
        let ranOnce = Set(ran)
        if ran.count != ranOnce.count {
            // What the store and the workers saw of each job that ran twice, for whoever reads a
            // failure: its events and every worker log line that names it.
            var seen: Set<Int64> = []
            let twice = Set(ran.filter { !seen.insert($0).inserted })
            for id in twice.sorted() {
                let events = try await CLI.run(["events", "--job", "\(id)"], db: db)
                let logs = (0..<2).map { index in
                    let log =
                        (try? String(
                            contentsOf: scratch.appendingPathComponent("worker-\(index).err"), encoding: .utf8)) ?? ""
                    return log.split(separator: "\n").filter { $0.contains("job \(id)") }.joined(separator: "\n")
                }
                Issue.record("job \(id) ran twice; its events:\n\(events.stdout)\nworker logs:\n\(logs)")
            }
        }
        #expect(ran.count == ranOnce.count, "\(ran.count - ranOnce.count) run(s) of a job that had run already")
        #expect(ranOnce.count == total, "\(total) jobs in the store, \(ranOnce.count) ran")
        #expect(Set(produced.acknowledged).isSubset(of: ranOnce), "an acknowledged job never ran")
        #expect(try await count("state:succeeded attempt:1") == total, "a job needed a second attempt")

        for (index, worker) in workers.enumerated() {
            let log = try String(contentsOf: scratch.appendingPathComponent("worker-\(index).err"), encoding: .utf8)
            let lines = log.split(separator: "\n")
            #expect(worker.terminationStatus == 0, "worker \(index) exited \(worker.terminationStatus): \(log)")
            let warnings = lines.filter { $0.contains(" warning ") }
            #expect(warnings.count == 1, "worker \(index) warned \(warnings.count) times: \(log)")
            #expect(
                warnings.first?.contains("reconnecting with backoff") == true, "worker \(index) said: \(log)")
            #expect(
                lines.filter { $0.contains(" notice ") && $0.contains("accepts connections again") }.count == 1,
                "worker \(index) did not say once that the server is back: \(log)")
            #expect(!lines.contains { $0.contains(" error ") }, "worker \(index) logged errors: \(log)")
        }
        #expect(logs.messages.count <= 1, "the producer said: \(logs.messages)")
        try? FileManager.default.removeItem(at: scratch)
    }
}
