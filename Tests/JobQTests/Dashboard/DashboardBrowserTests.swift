import Foundation
import Testing

@testable import JobQCore
@testable import JobQSQL
@testable import JobQSQLite

/// The dashboard in a real browser: headless Chromium driven by selenium (Debian's `chromium`
/// and `chromium-driver`, selenium from PyPI; `.ci/run` installs them) against a `jobq
/// dashboard` process. Screenshots go to ci-artifacts/screenshots.
@Suite("Web dashboard in a real browser")
struct DashboardBrowserTests {
    static let browserAvailable =
        PythonModules.inCI
        || FileManager.default.isExecutableFile(atPath: "/usr/bin/chromium")
            && FileManager.default.isExecutableFile(atPath: "/usr/bin/chromedriver")
            && PythonModules.available("selenium")
    static let browserMissing: Comment =
        "no headless browser: install Debian's chromium and chromium-driver and `python3 -m pip install selenium` (.ci/run does)"

    @Test(RunsAlone.trait, .enabled(if: browserAvailable, browserMissing))
    func anOperatorSeesLiveUpdatesAndRetriesADeadJob() async throws {
        let store = try TemporaryStore()
        let queue = try store.open()
        _ = try await queue.enqueue(
            try JobRequest(
                executor: "sum", payloadJSON: #"{"a":1,"b":2}"#, options: .init(queue: "web", name: "nightly-report")))
        let dead = try await queue.enqueue(
            try JobRequest(
                executor: "fail", payloadJSON: #"{"message":"the mail server said no"}"#,
                options: .init(queue: "web", maxAttempts: 1)))
        let workflow = try await queue.submit(
            try Workflow(name: "import") {
                try WorkflowStep(
                    executor: "sum", payloadJSON: #"{"a":1,"b":1}"#, options: .init(queue: "web", name: "fetch"))
                try WorkflowGroup.parallel(name: "process") {
                    try WorkflowStep(
                        executor: "sum", payloadJSON: #"{"a":2,"b":2}"#, options: .init(queue: "web", name: "resize"))
                    try WorkflowStep(
                        executor: "echo", payloadJSON: #"{"ok":true}"#, options: .init(queue: "web", name: "index"))
                }
                try WorkflowStep(
                    executor: "echo", payloadJSON: #"{"done":true}"#, options: .init(queue: "web", name: "publish"))
            })
        // Dead jobs for the search and the bulk retry: three of customer acme, one of bob.
        var bulk: [JobID] = []
        for customer in ["acme", "bob", "acme", "acme"] {
            bulk.append(
                try await queue.enqueue(
                    try JobRequest(
                        executor: "fail", payloadJSON: #"{"customer":"\#(customer)","message":"quota"}"#,
                        options: .init(queue: "web", maxAttempts: 1))
                ).id)
        }
        try await work(queue, queues: ["web"])
        _ = try await queue.addSchedule(
            Schedule(
                name: "hourly-cleanup", request: try JobRequest(executor: "echo", payloadJSON: "{}"),
                timing: .every(.seconds(3600))))
        #expect(try await queue.job(dead.id)?.state == .dead)

        let log = store.directory.appendingPathComponent("dashboard.log").path
        let dashboard = try CLI.startDetached(["dashboard", "--listen", "127.0.0.1:0"], db: store.path, logPath: log)
        let base = try await MetricsEndpointTests.listeningAddress(in: log)
        let shots = ReadmeTests.root.appendingPathComponent("ci-artifacts/screenshots").path
        let output = try await PythonModules.run(
            script: try String(
                contentsOf: ReadmeTests.root.appendingPathComponent("Tests/Browser/dashboard_browser.py"),
                encoding: .utf8),
            arguments: [
                "--base", base, "--jobq", CLI.binary.path, "--db", store.path, "--dead", "\(dead.id)", "--workflow",
                "\(workflow)", "--shots", shots, "--bulk-filter", #"state:dead /customer = "acme""#, "--bulk-count",
                "3",
                "--succeeded", "\(try await queue.count(where: JobFilter("state:succeeded")))"
            ])
        #expect(output.contains(#""ok": true"#), "\(output)")
        #expect(output.contains(#""after_retry": "ready""#))
        #expect(try await queue.job(dead.id)?.state == .ready, "the click retried the job in the store")
        #expect(output.contains(#""bulk_result": "Retried 3 of 3 matching jobs.""#), "\(output)")
        #expect(
            output.contains(#""graph_states": ["succeeded", "succeeded", "succeeded", "succeeded"]"#),
            "the workflow's drawing shows each step's state: \(output)")
        let publish = try #require(try await queue.workflow(workflow)?.jobs.first { $0.name == "publish" })
        #expect(output.contains(#""graph_click": "\#(base)/jobs/\#(publish.id)""#), "a click on a step opens its job")
        for (index, id) in bulk.enumerated() {
            #expect(try await queue.job(id)?.state == (index == 1 ? .dead : .ready), "job \(id) after the bulk retry")
        }
        #expect(output.contains(#""history_succeeded": "#), "the history's bars add up to what succeeded: \(output)")
        for name in ["queues", "job", "jobs", "workflow", "schedules", "search", "bulk-confirm", "history"] {
            #expect(FileManager.default.fileExists(atPath: "\(shots)/\(name).png"), "screenshot \(name).png")
        }
        kill(dashboard.processIdentifier, SIGTERM)
        await dashboard.wait()
        #expect(
            dashboard.terminationStatus == 0,
            "the dashboard stops cleanly on SIGTERM with a live stream open: \((try? String(contentsOfFile: log, encoding: .utf8)) ?? "")"
        )
    }
}
