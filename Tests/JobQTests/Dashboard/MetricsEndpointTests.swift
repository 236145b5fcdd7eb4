import Foundation
import Testing

@testable import JobQCore
@testable import JobQSQL
@testable import JobQSQLite

/// `jobq work --metrics-listen`: a real worker process, scraped over HTTP.
@Suite("jobq work --metrics-listen")
struct MetricsEndpointTests {
    /// Reads the address a `jobq` process logged (`... at http://HOST:PORT/...`).
    static func listeningAddress(in logPath: String, within limit: Duration = .seconds(30)) async throws -> String {
        @Sendable func address() -> String? {
            let log = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
            return log.range(of: #"http://[0-9.]+:[0-9]+"#, options: .regularExpression).map { String(log[$0]) }
        }
        try await eventually(limit, "the server to log its address") { address() != nil }
        return try #require(address())
    }

    /// Samples of a Prometheus text exposition, as prometheus_client's parser reads them.
    static func parsePrometheus(_ text: String) async throws -> [(
        name: String, labels: [String: String], value: Double
    )] {
        let file = TestScratch.url("jobq-metrics", suffix: ".txt")
        try text.write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        let json = try await PythonModules.run(
            script: """
                import json, sys
                from prometheus_client.parser import text_string_to_metric_families
                samples = []
                for family in text_string_to_metric_families(open(sys.argv[1]).read()):
                    for sample in family.samples:
                        samples.append({"name": sample.name, "labels": sample.labels, "value": sample.value})
                print(json.dumps(samples))
                """,
            arguments: [file.path])
        let rows = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [[String: Any]])
        return rows.map {
            (
                $0["name"] as? String ?? "", $0["labels"] as? [String: String] ?? [:],
                ($0["value"] as? NSNumber)?.doubleValue ?? .nan
            )
        }
    }

    @Test(.enabled(if: PythonModules.prometheusClient, PythonModules.prometheusClientMissing), arguments: TestStore.all)
    func scrapedCountersMatchWhatTheWorkerDid(kind: TestStore) async throws {
        let db = try await kind.location()
        for payload in [#"{"a":1,"b":2}"#, #"{"a":3,"b":4}"#, #"{"a":5,"b":6}"#] {
            #expect(
                try await CLI.run(["enqueue", "sum", "--queue", "scraped", "--payload", payload], db: db).status == 0)
        }
        #expect(
            try await CLI.run(
                ["enqueue", "fail", "--queue", "scraped", "--max-attempts", "1", "--payload", #"{"message":"no"}"#],
                db: db
            ).status == 0)

        let log = TestScratch.url("jobq-metrics", suffix: ".log").path
        let worker = try CLI.startDetached(
            ["work", "--queue", "scraped", "--metrics-listen", "127.0.0.1:0"], db: db, logPath: log)
        let base = try await Self.listeningAddress(in: log)
        try await eventually(.seconds(30), "the four jobs to finish") {
            let counts = try await CLITests.jobs(db).map { $0["state"] as? String ?? "" }
            return counts.filter { $0 == "succeeded" }.count == 3 && counts.contains("dead")
        }

        let metrics = try await HTTP.get(base + "/metrics")
        #expect(metrics.status == 200)
        #expect(metrics.header("Content-Type")?.hasPrefix("text/plain; version=0.0.4") == true)
        let samples = try await Self.parsePrometheus(metrics.body)
        func value(_ name: String, _ labels: [String: String]) -> Double? {
            samples.first { sample in sample.name == name && labels.allSatisfy { sample.labels[$0.key] == $0.value } }?
                .value
        }
        #expect(
            value("jobq_jobs_completed_total", ["queue": "scraped", "executor": "sum", "outcome": "succeeded"]) == 3)
        #expect(value("jobq_jobs_completed_total", ["queue": "scraped", "executor": "fail", "outcome": "dead"]) == 1)
        #expect(value("jobq_jobs_failed_total", ["queue": "scraped", "executor": "fail", "reason": "error"]) == 1)
        #expect(value("jobq_jobs_started_total", ["queue": "scraped", "executor": "sum"]) == 3)
        #expect(value("jobq_job_duration_seconds_count", ["queue": "scraped", "executor": "sum"]) == 3)
        #expect(value("jobq_job_duration_seconds_bucket", ["queue": "scraped", "executor": "sum", "le": "+Inf"]) == 3)
        #expect(value("jobq_jobs_running", ["queue": "scraped", "executor": "sum"]) == 0)
        // The pool reads the store's counts as it starts (and every 15s).
        #expect(value("jobq_queue_jobs", ["queue": "scraped", "state": "ready"]) != nil)

        let health = try await HTTP.get(base + "/healthz")
        #expect(health.status == 200)
        #expect(health.body.contains(#""status":"ok""#))
        #expect(try await HTTP.get(base + "/nothing-here").status == 404)

        kill(worker.processIdentifier, SIGTERM)
        await worker.wait()
        #expect(worker.terminationStatus == 0, "a worker serving metrics still stops cleanly on SIGTERM")
    }

    @Test func aBadListenAddressIsRefusedBeforeAnythingStarts() async throws {
        let store = try TemporaryStore()
        for bad in ["127.0.0.1:99999", "localhost:http", "::1:9464", ":", "[::1]9464"] {
            let result = try await CLI.run(["work", "--until-empty", "--metrics-listen", bad], db: store.path)
            #expect(result.status == 2, "\(bad): \(result.stderr)")
            #expect(result.stderr.contains("--metrics-listen"), "\(bad): \(result.stderr)")
        }
        #expect(!FileManager.default.fileExists(atPath: store.path), "nothing was opened or created")
    }
}
