import Foundation
import JobQ
import JobQPostgres
import Testing

@testable import JobQCore
@testable import JobQSQL

/// Rate limits and partitioned limits across `jobq work` processes, from recorded start and
/// finish times.
@Suite("Rate limits and partitions across processes", .serialized)
struct RateAndPartitionProcessTests {
    static func open(_ store: TestStore, _ db: String) async throws -> JobQueue {
        switch store {
        case .sqlite: try JobQueue(path: db)
        case .postgres: try await JobQueue(postgres: try PostgresSettings(url: db), logger: PostgresTestServer.logger)
        }
    }

    static func enqueue(_ lines: [String], db: String, scratch: URL) async throws {
        let file = scratch.appendingPathComponent("jobs-\(UUID().uuidString).jsonl")
        try (lines.joined(separator: "\n") + "\n").write(to: file, atomically: true, encoding: .utf8)
        let enqueued = try await CLI.run(["enqueue", "--file", file.path], db: db)
        try #require(enqueued.status == 0, "\(enqueued.stderr)")
    }

    static func runWorkers(_ count: Int, queue: String, concurrency: Int, db: String, scratch: URL) async throws {
        let workers = try (0..<count).map { index in
            try CLI.startDetached(
                ["work", "--queue", queue, "--until-empty", "--concurrency", "\(concurrency)", "--no-scheduler"],
                db: db, logPath: scratch.appendingPathComponent("\(queue)-worker-\(index).log").path)
        }
        for worker in workers {
            await worker.wait()
            #expect(worker.terminationStatus == 0)
        }
    }

    /// `--rate 20/1s`, 100 short jobs, four workers of 8 slots: in every span of one second
    /// (sliding, from each start) at most 20 jobs started, every job ran once, and the drain
    /// took the 4 s the rate needs at least.
    @Test(arguments: TestStore.all) func fourWorkersKeepToTheRateInEverySlidingWindow(store: TestStore) async throws {
        let db = try await store.location()
        let scratch = TestScratch.url("rate-limit")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        let line = #"{"executor": "sleep", "payload": {"seconds": 0.01}, "queue": "rated"}"#
        try await Self.enqueue(Array(repeating: line, count: 100), db: db, scratch: scratch)
        let limited = try await CLI.run(["queue", "limit", "rated", "--rate", "20/1s"], db: db)
        #expect(limited.status == 0 && limited.stdout.contains("20/1s"), "\(limited.stderr)")

        try await Self.runWorkers(4, queue: "rated", concurrency: 8, db: db, scratch: scratch)

        let queue = try await Self.open(store, db)
        let jobs = try await queue.jobs(matching: JobQuery(queue: "rated", limit: 200))
        #expect(jobs.count == 100 && jobs.allSatisfy { $0.state == .succeeded && $0.attempt == 1 })
        let starts = jobs.compactMap { $0.startedAt?.timeIntervalSince1970 }.sorted()
        #expect(starts.count == 100)
        // The window is (now - 1s, now]: the 21st start after any start is a full second later.
        var worst = Double.infinity
        for index in starts.indices where index + 20 < starts.count {
            worst = min(worst, starts[index + 20] - starts[index])
        }
        #expect(worst >= 1.0 - 1e-6, "21 starts within \(worst)s")
        #expect((starts.last ?? 0) - (starts.first ?? 0) >= 4.0 - 1e-6, "100 starts at 20/s take 4s at least")
        let shown = try await CLI.run(["queue", "show", "rated"], db: db)
        #expect(shown.status == 0 && shown.stdout.contains("20/1s"), "\(shown.stdout)")
    }

    /// 2 at once per customer, three customers: one customer's 100 queued jobs (first in claim
    /// order) never hold back the others' first jobs by more than a job's length, and no
    /// customer has more than 2 running at any moment.
    @Test(arguments: TestStore.all) func aBusyCustomerNeverHoldsBackTheOthers(store: TestStore) async throws {
        let db = try await store.location()
        let scratch = TestScratch.url("partitions")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        func line(_ customer: String) -> String {
            #"{"executor": "sleep", "payload": {"seconds": 0.1, "customer": "\#(customer)"}, "queue": "reports"}"#
        }
        try await Self.enqueue(
            Array(repeating: line("a"), count: 100) + Array(repeating: line("b"), count: 4)
                + Array(repeating: line("c"), count: 4), db: db, scratch: scratch)
        let limited = try await CLI.run(
            ["queue", "limit", "reports", "--concurrency", "2", "--partition-by", "/customer"], db: db)
        #expect(limited.status == 0, "\(limited.stderr)")

        try await Self.runWorkers(2, queue: "reports", concurrency: 8, db: db, scratch: scratch)

        let queue = try await Self.open(store, db)
        let jobs = try await queue.jobs(matching: JobQuery(queue: "reports", limit: 200))
        #expect(jobs.count == 108 && jobs.allSatisfy { $0.state == .succeeded && $0.attempt == 1 })
        var byCustomer: [String: [Job]] = [:]
        for job in jobs {
            let customer = try JSONDecoder().decode([String: JSONValue].self, from: Data(job.payloadJSON.utf8))
            byCustomer[
                customer["customer"].flatMap { if case .string(let s) = $0 { s } else { nil } } ?? "?", default: []
            ]
            .append(job)
        }
        for (customer, jobs) in byCustomer {
            let most = jobs.mostAtOnce
            #expect(most <= 2, "customer \(customer): \(most) at once")
        }
        let startTimes = jobs.compactMap { $0.startedAt?.timeIntervalSince1970 }
        let firstStart = try #require(startTimes.min())
        for customer in ["b", "c"] {
            let customerStarts = (byCustomer[customer] ?? []).compactMap { $0.startedAt?.timeIntervalSince1970 }
            let first = try #require(customerStarts.min())
            #expect(first - firstStart <= 0.1, "customer \(customer)'s first job started \(first - firstStart)s late")
        }
        let shown = try await CLI.run(["queue", "show", "reports"], db: db)
        #expect(shown.status == 0 && shown.stdout.contains("per /customer"), "\(shown.stdout)")
    }
}
