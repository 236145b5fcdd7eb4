import Foundation
import Testing

@testable import JobQCore
@testable import JobQDashboard

/// The history page: its charts show what ran (each bucket's bar titled with its counts and
/// linked to its jobs), the same figures as JSON, a queue's or an executor's alone; through the
/// real server on both stores, and `jobq stats` through the real binary.
@Suite("History page and jobq stats")
struct HistoryPageTests {
    @Test(arguments: TestStore.all) func theChartsShowWhatRanAndLinkToItsJobs(store: TestStore) async throws {
        let queue = try await store.open()
        for index in 0..<4 {
            _ = try await queue.enqueue(
                try JobRequest(executor: "sum", payloadJSON: #"{"a": \#(index), "b": 1}"#, options: .init(queue: "web"))
            )
        }
        _ = try await queue.enqueue(
            try JobRequest(executor: "fail", payloadJSON: "{}", options: .init(queue: "web", maxAttempts: 1)))
        _ = try await work(queue, queues: ["web"])
        let dashboard = try await RunningDashboard(
            queue: queue, options: .init(storeName: "test", access: .loopbackOnly))

        let page = try await dashboard.get("/history?window=1h&queue=web")
        #expect(page.status == 200)
        #expect(page.body.components(separatedBy: "<figure class=\"history-chart\">").count - 1 == 4, "four charts")
        for title in ["Finished per minute, by outcome", "Wait from run time to start", "Run time", "Backlog"] {
            #expect(page.body.contains(title), "missing \(title)")
        }
        // The bars' titles add up to what ran, and each links to the jobs that finished in it.
        let titles = page.body.components(separatedBy: "<title>").dropFirst().map { $0.prefix { $0 != "<" } }
        let succeeded = titles.compactMap { title -> Int? in
            guard let range = title.range(of: #"(\d+) succeeded"#, options: .regularExpression) else { return nil }
            return Int(title[range].split(separator: " ")[0])
        }.reduce(0, +)
        #expect(succeeded == 4, "\(titles)")
        // The five jobs may finish on both sides of a minute (a loaded CI run's did): the bars'
        // links together lead to all five, each job once.
        let links = Set(
            page.body.components(separatedBy: "<a href=\"").dropFirst().map { String($0.prefix { $0 != "\"" }) }
                .filter { $0.hasPrefix("/jobs?where=") })
        #expect(!links.isEmpty)
        var linked = 0
        for link in links {
            let jobs = try await dashboard.get(link.replacingOccurrences(of: "&amp;", with: "&"))
            #expect(jobs.status == 200)
            linked += jobs.body.components(separatedBy: "<tr").count - 2
        }
        #expect(linked == 5, "the bars' jobs: \(links)")

        let json = try await dashboard.get("/history?window=1h&queue=web&format=json")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.body.utf8)) as? [String: Any])
        let buckets = try #require(object["buckets"] as? [[String: Any]])
        #expect(buckets.compactMap { $0["succeeded"] as? Int }.reduce(0, +) == 4)
        #expect(buckets.compactMap { $0["dead"] as? Int }.reduce(0, +) == 1)

        let executor = try await dashboard.get("/history?window=24h&executor=fail")
        #expect(executor.status == 200 && executor.body.contains("kept by queue, not by executor"))
        #expect(try await dashboard.get("/history?window=2h").status == 400)
        let hostile = try await dashboard.get("/history?queue=%3Cscript%3Ealert(1)%3C/script%3E")
        #expect(hostile.status == 200 && !hostile.body.contains("<script>alert"), "a queue name is escaped")
    }

    @Test func jobqStatsPrintsTheBucketsAndRefusesABadWindow() async throws {
        let store = try TemporaryStore()
        let queue = try store.open()
        for index in 0..<3 {
            _ = try await queue.enqueue(try JobRequest(executor: "sum", payloadJSON: #"{"a": \#(index), "b": 0}"#))
        }
        _ = try await work(queue)
        let table = try await CLI.run(["stats", "--window", "1h"], db: store.path)
        #expect(table.status == 0, "\(table.stderr)")
        #expect(
            table.stdout.contains("SUCCEEDED") && table.stdout.split(separator: "\n").count == 61, "\(table.stdout)")
        let json = try await CLI.run(["stats", "--window", "10m", "--json"], db: store.path)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        let buckets = try #require(object["buckets"] as? [[String: Any]])
        #expect(buckets.count == 10 && buckets.compactMap { $0["succeeded"] as? Int }.reduce(0, +) == 3)
        let bad = try await CLI.run(["stats", "--window", "soon"], db: store.path)
        #expect(bad.status == 2 && bad.stderr.contains("--window"), "\(bad.stderr)")
        let tooLong = try await CLI.run(["stats", "--window", "90d"], db: store.path)
        #expect(tooLong.status == 2 && tooLong.stderr.contains("31 days"), "\(tooLong.stderr)")
    }
}
