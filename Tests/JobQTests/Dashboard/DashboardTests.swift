import Foundation
import JobQDashboard
import Logging
import ServiceLifecycle
import Synchronization
import Testing

@testable import JobQCore
@testable import JobQSQL
@testable import JobQSQLite

/// A dashboard served on a free loopback port, stopped when the test ends: by a graceful
/// shutdown, as `jobq dashboard` stops on SIGTERM. Cancelling the server's task instead let a
/// connection still in the accept queue (a test's resetting clients) reach a server whose
/// connection loop had gone, and NIO stopped the test process on a precondition.
final class RunningDashboard: Sendable {
    let port: Int
    let group: ServiceGroup
    var base: String { "http://127.0.0.1:\(port)" }

    init(queue: JobQueue, options: Dashboard.Options) async throws {
        let bound = Mutex<Int?>(nil)
        let server = try DashboardServer(
            queue: queue, address: ListenAddress(host: "127.0.0.1", port: 0), options: options
        ) { address in
            bound.withLock { $0 = address.port }
        }
        let group = ServiceGroup(services: [server], logger: Logger(label: "test"))
        self.group = group
        Task { try await group.run() }
        try await eventually(.seconds(30), "the dashboard to listen") { bound.withLock { $0 } != nil }
        port = bound.withLock { $0 }!
    }

    deinit {
        let group = self.group
        Task { await group.triggerGracefulShutdown() }
    }

    func get(_ path: String, headers: [String: String] = [:]) async throws -> HTTP.Response {
        try await HTTP.get(base + path, headers: headers)
    }

    /// A form POST, as the dashboard's own pages send it (same origin, with the form token
    /// unless `token` says otherwise).
    func post(_ path: String, fields: [String: String] = [:], token: String?, headers: [String: String] = [:])
        async throws -> HTTP.Response
    {
        var fields = fields
        if let token { fields["csrf"] = token }
        let body = fields.map {
            "\($0.key)=\($0.value.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")"
        }.joined(separator: "&")
        var all = ["Content-Type": "application/x-www-form-urlencoded", "Origin": base, "Sec-Fetch-Site": "same-origin"]
        for (name, value) in headers { all[name] = value }
        return try await HTTP.request("POST", base + path, headers: all, body: body)
    }

    /// The form token the pages carry.
    func formToken() async throws -> String {
        let page = try await get("/jobs")
        let marker = #"name="csrf" value=""#
        guard let start = page.body.range(of: marker) else {
            // The jobs list has no forms; a queue row does.
            let queues = try await get("/")
            let range = try #require(queues.body.range(of: marker), "a page with a form")
            return String(queues.body[range.upperBound...].prefix { $0 != "\"" })
        }
        return String(page.body[start.upperBound...].prefix { $0 != "\"" })
    }
}

/// A store with jobs in every state, a workflow, a schedule, a trigger, a batch and a tracking
/// set; hostile text in names and payloads.
struct DashboardFixture {
    static let hostile = "<script>alert(1)</script>"
    let queue: JobQueue
    var jobs: [JobState: JobID] = [:]
    var workflow: WorkflowID = 0
    let pool: Task<Void, any Error>

    static func make(_ store: TestStore) async throws -> DashboardFixture {
        let queue = try await store.open()
        func enqueue(_ executor: String, _ payload: String, _ options: JobOptions = .init()) async throws -> JobID {
            try await queue.enqueue(try JobRequest(executor: executor, payloadJSON: payload, options: options)).id
        }
        var jobs: [JobState: JobID] = [:]
        let payload = #"{"a":1,"b":2,"note":"\#(hostile)"}"#
        jobs[.succeeded] = try await enqueue("sum", payload, .init(queue: "web", name: hostile))
        jobs[.dead] = try await enqueue("fail", #"{"message":"\#(hostile)"}"#, .init(queue: "web", maxAttempts: 1))
        try await work(queue, queues: ["web"])
        jobs[.cancelled] = try await enqueue("sum", payload, .init(queue: "web"))
        _ = try await queue.cancel(jobs[.cancelled]!)
        jobs[.scheduled] = try await enqueue(
            "sum", payload, .init(queue: "web", runAt: Date().addingTimeInterval(3600)))
        jobs[.waiting] = try await enqueue("sum", payload, .init(queue: "web", after: [jobs[.scheduled]!]))
        jobs[.ready] = try await enqueue("sum", payload, .init(queue: "idle"))
        // A running job and a failed one waiting for its retry, held by a pool that stays up.
        jobs[.running] = try await enqueue("sleep", #"{"seconds":60}"#, .init(queue: "busy"))
        jobs[.failed] = try await enqueue("fail", #"{"message":"again"}"#, .init(queue: "busy", maxAttempts: 5))
        var options = quickOptions(stopWhen: .never)
        options.retryBackoff = RetryBackoff(base: .seconds(3600), jitter: 0)
        options.shutdownGracePeriod = .milliseconds(100)
        let pool = WorkerPool(
            queue: queue, queues: ["busy"], concurrency: 2, executors: BuiltinExecutors.all, options: options)
        let running = Task { try await pool.run() }
        let (runningID, failedID) = (jobs[.running]!, jobs[.failed]!)
        try await eventually(.seconds(15), "a running and a failed job") {
            let (a, b) = (try await queue.job(runningID)?.state, try await queue.job(failedID)?.state)
            return a == .running && b == .failed
        }
        let workflow = try await queue.submit(
            try Workflow(name: hostile) {
                try WorkflowStep(
                    executor: "sum", payloadJSON: #"{"a":1,"b":1}"#, options: .init(queue: "flow", name: "first"))
                try WorkflowGroup.parallel(name: "fan") {
                    try WorkflowStep(
                        executor: "sum", payloadJSON: #"{"a":2,"b":2}"#, options: .init(queue: "flow", name: "left"))
                    try WorkflowStep(
                        executor: "sum", payloadJSON: #"{"a":3,"b":3}"#, options: .init(queue: "flow", name: "right"))
                }
            })
        _ = try await queue.addSchedule(
            Schedule(
                name: "nightly", request: try JobRequest(executor: "sum", payloadJSON: #"{"a":1,"b":1}"#),
                timing: .every(.seconds(3600))))
        _ = try await queue.addTrigger(
            Trigger(event: "order.paid", task: "receipt", request: try JobRequest(executor: "echo", payloadJSON: "{}")))
        _ = try await queue.createBatch("import")
        _ = try await queue.addTrackingSet("watch", members: [.job(named: "first")])
        return DashboardFixture(queue: queue, jobs: jobs, workflow: workflow, pool: running)
    }
}

@Suite("Web dashboard over HTTP")
struct DashboardTests {
    @Test(arguments: TestStore.all) func everyPageShowsTheStoreAndEscapesWhatItShows(store: TestStore) async throws {
        let fixture = try await DashboardFixture.make(store)
        defer { fixture.pool.cancel() }
        let dashboard = try await RunningDashboard(
            queue: fixture.queue, options: .init(storeName: "test store", access: .loopbackOnly))

        let queues = try await dashboard.get("/")
        #expect(queues.status == 200)
        #expect(queues.header("Content-Type") == "text/html; charset=utf-8")
        #expect(queues.header("Content-Security-Policy")?.contains("script-src 'self'") == true)
        #expect(queues.header("X-Frame-Options") == "DENY")
        for name in ["web", "idle", "busy", "flow"] {
            #expect(queues.body.contains(">\(name)</a>"), "queue \(name) listed")
        }
        #expect(queues.body.contains(#"href="/jobs?queue=web&state=dead">1</a>"#), "counts link to the jobs they count")

        for (state, id) in fixture.jobs {
            let page = try await dashboard.get("/jobs/\(id)")
            #expect(page.status == 200, "job in state \(state)")
            #expect(
                page.body.contains(#"<span class="badge state-\#(state.rawValue)">\#(state.rawValue)</span>"#),
                "job \(id) shows \(state)")
            #expect(page.body.contains("<h2>Events</h2>"))
        }
        let dead = try await dashboard.get("/jobs/\(fixture.jobs[.dead]!)")
        #expect(dead.body.contains("&lt;script&gt;alert(1)&lt;/script&gt;"), "the error is shown, escaped")
        #expect(dead.body.contains("action=\"/jobs/\(fixture.jobs[.dead]!)/retry\""), "a dead job offers retry")
        #expect(
            try await dashboard.get("/jobs/\(fixture.jobs[.running]!)").body.contains("/cancel\""),
            "a running job offers cancel")

        let list = try await dashboard.get("/jobs?queue=web&state=succeeded")
        #expect(list.status == 200 && list.body.contains("/jobs/\(fixture.jobs[.succeeded]!)\""))
        #expect(!list.body.contains("/jobs/\(fixture.jobs[.dead]!)\""), "filtered by state")
        let byExecutor = try await dashboard.get("/jobs?executor=sleep")
        #expect(
            byExecutor.body.contains("/jobs/\(fixture.jobs[.running]!)\"")
                && !byExecutor.body.contains("/jobs/\(fixture.jobs[.succeeded]!)\""))

        let workflow = try await dashboard.get("/workflows/\(fixture.workflow)")
        #expect(workflow.status == 200)
        #expect(
            workflow.body.contains(#"<div class="group parallel""#) && workflow.body.contains("<strong>fan</strong>"))
        #expect(try await dashboard.get("/workflows").body.contains("/workflows/\(fixture.workflow)\""))
        let schedules = try await dashboard.get("/schedules").body
        #expect(schedules.contains("nightly") && schedules.contains("every 1h"), "\(schedules)")
        #expect(schedules.components(separatedBy: "<time ").count - 1 == 3, "its next three runs")
        #expect(try await dashboard.get("/triggers").body.contains("order.paid"))
        let batches = try await dashboard.get("/batches")
        #expect(batches.body.contains("import") && batches.body.contains("watch"))
        let fragment = try await dashboard.get("/?fragment=1")
        #expect(fragment.status == 200 && !fragment.body.contains("<html") && fragment.body.contains("<table>"))

        for path in [
            "/", "/jobs", "/jobs?queue=web", "/jobs/\(fixture.jobs[.succeeded]!)", "/jobs/\(fixture.jobs[.dead]!)",
            "/workflows", "/workflows/\(fixture.workflow)"
        ] {
            let page = try await dashboard.get(path)
            #expect(!page.body.contains(DashboardFixture.hostile), "\(path) shows stored text escaped")
        }
        // What is paused, and since when: an executor's name is shown escaped.
        try await fixture.queue.pause(executor: DashboardFixture.hostile)
        try await fixture.queue.pause(queue: "idle")
        try await fixture.queue.pauseAll()
        let paused = try await dashboard.get("/").body
        #expect(paused.contains("Every job is paused, since <time "), "\(paused)")
        #expect(paused.contains("is paused in every queue, since <time "))
        #expect(!paused.contains(DashboardFixture.hostile), "the executor's name is escaped")
        #expect(paused.contains(#"<span class="badge state-paused">paused</span> since <time "#), "queue idle")
        try await fixture.queue.resumeAll()
        try await fixture.queue.resume(executor: DashboardFixture.hostile)
        try await fixture.queue.resume(queue: "idle")

        #expect(try await dashboard.get("/assets/dashboard.js").body.contains("EventSource"))
        #expect(try await dashboard.get("/assets/dashboard.css").header("Content-Type") == "text/css; charset=utf-8")
    }

    @Test func badIDsAndFiltersAreClearErrors() async throws {
        let queue = try JobQueue.inMemory()
        let dashboard = try await RunningDashboard(
            queue: queue, options: .init(storeName: "memory", access: .loopbackOnly))
        for (path, status, words) in [
            ("/jobs/abc", 400, "not a job id"), ("/jobs/0", 400, "not a job id"), ("/jobs/-3", 400, "not a job id"),
            ("/jobs/99999999", 404, "no job #99999999"), ("/jobs?state=bogus", 400, "is not one of"),
            ("/jobs?before=x", 400, "before"), ("/workflows/xyz", 400, "not a workflow id"),
            ("/workflows/42", 404, "no workflow #42"),
            ("/workflows?state=nope", 400, "is not one of"), ("/jobs/%3Cscript%3E", 400, "not a job id")
        ] {
            let response = try await dashboard.get(path)
            #expect(response.status == status, "\(path)")
            #expect(response.body.contains(words), "\(path): \(response.body.prefix(300))")
            #expect(!response.body.contains("<script>"), "\(path) echoes nothing unescaped")
        }
    }

    @Test(arguments: TestStore.all) func actionsChangeTheStoreAndRefusalsChangeNothing(store: TestStore) async throws {
        let fixture = try await DashboardFixture.make(store)
        defer { fixture.pool.cancel() }
        let queue = fixture.queue
        let dashboard = try await RunningDashboard(
            queue: queue, options: .init(storeName: "test store", access: .loopbackOnly))
        let token = try await dashboard.formToken()
        let dead = fixture.jobs[.dead]!

        // Refused: no form token, a wrong one, another origin, a cross-site fetch.
        for (fields, headers, what) in [
            ([String: String](), [String: String](), "no form token"),
            (["csrf": "0000"], [:], "a wrong form token"),
            (["csrf": token], ["Origin": "http://evil.example"], "another origin"),
            (["csrf": token], ["Sec-Fetch-Site": "cross-site"], "a cross-site request")
        ] {
            let response = try await dashboard.post("/jobs/\(dead)/retry", fields: fields, token: nil, headers: headers)
            #expect(response.status == 403, "\(what)")
            #expect(try await queue.job(dead)?.state == .dead, "\(what): nothing changed")
        }

        let retried = try await dashboard.post("/jobs/\(dead)/retry", token: token)
        #expect(retried.status == 303 && retried.header("Location") == "/jobs/\(dead)")
        #expect(try await queue.job(dead)?.state == .ready)

        let running = fixture.jobs[.running]!
        let conflict = try await dashboard.post("/jobs/\(running)/retry", token: token)
        #expect(conflict.status == 409 && conflict.body.contains("only failed, dead or cancelled"))
        #expect(try await queue.job(running)?.state == .running, "a refused action changes nothing")

        #expect(try await dashboard.post("/jobs/\(fixture.jobs[.ready]!)/cancel", token: token).status == 303)
        #expect(try await queue.job(fixture.jobs[.ready]!)?.state == .cancelled)

        #expect(try await dashboard.post("/jobs/\(fixture.jobs[.succeeded]!)/delete", token: token).status == 303)
        #expect(try await queue.job(fixture.jobs[.succeeded]!) == nil)
        #expect(try await dashboard.post("/jobs/\(fixture.jobs[.succeeded]!)/delete", token: token).status == 404)
        #expect(try await dashboard.post("/jobs/abc/delete", token: token).status == 400)

        #expect(try await dashboard.post("/queues/pause", fields: ["queue": "web"], token: token).status == 303)
        #expect(try await queue.status().queues.first { $0.name == "web" }?.paused == true)
        #expect(try await dashboard.get("/").body.contains(#"<span class="badge state-paused">paused</span>"#))
        #expect(try await dashboard.post("/queues/resume", fields: ["queue": "web"], token: token).status == 303)
        #expect(try await queue.status().queues.first { $0.name == "web" }?.paused == false)
        #expect(try await dashboard.post("/queues/pause", token: token).status == 400, "no queue named")
        #expect(!(try await dashboard.get("/").body.contains(" at once")), "no limit yet")
        try await queue.setLimits(QueueLimits(concurrency: 1), for: "web")
        #expect(try await dashboard.get("/").body.contains("1 at once"), "the queues page shows the limit")
        // A partitioned rate: the busiest partitions, their payload-made names escaped.
        var hostile = try JobRequest(executor: "sum", payloadJSON: #"{"a":1,"b":2}"#, options: .init(queue: "tenants"))
        hostile.options.partition = "<script>alert(1)</script>"
        _ = try await queue.enqueue(contentsOf: [hostile, hostile])
        try await queue.setLimits(
            QueueLimits(concurrency: 1, rate: RateLimit(5, per: .seconds(60)), partitionBy: .jobPartition),
            for: "tenants")
        let limited = try await dashboard.get("/").body
        #expect(limited.contains("1 at once, 5/1m per job partition"), "\(limited)")
        #expect(limited.contains("&lt;script&gt;alert(1)&lt;/script&gt;") && !limited.contains("<script>alert"))
        #expect(limited.contains("1 partition(s), the busiest"))

        #expect(try await dashboard.post("/schedules/pause", fields: ["name": "nightly"], token: token).status == 303)
        #expect(try await queue.schedule("nightly")?.paused == true)
        #expect(try await dashboard.post("/schedules/resume", fields: ["name": "nightly"], token: token).status == 303)
        #expect(try await queue.schedule("nightly")?.paused == false)
        #expect(try await dashboard.post("/schedules/pause", fields: ["name": "missing"], token: token).status == 404)

        #expect(try await dashboard.post("/workflows/\(fixture.workflow)/cancel", token: token).status == 303)
        #expect(try await queue.workflow(fixture.workflow)?.state == .cancelled)
    }

    @Test func aReadOnlyDashboardShowsNoActionsAndRefusesThem() async throws {
        let queue = try JobQueue.inMemory()
        let job = try await queue.enqueue(try JobRequest(executor: "sum", payloadJSON: #"{"a":1,"b":2}"#))
        let dashboard = try await RunningDashboard(
            queue: queue, options: .init(storeName: "memory", access: .loopbackOnly, readOnly: true))
        let page = try await dashboard.get("/jobs/\(job.id)")
        #expect(page.status == 200 && !page.body.contains("<form method=\"post\""))
        #expect(page.body.contains("read-only"))
        let refused = try await dashboard.post("/jobs/\(job.id)/cancel", token: "anything")
        #expect(refused.status == 403 && refused.body.contains("read-only"))
        #expect(try await queue.job(job.id)?.state == .ready)
    }

    @Test func withAnAccessTokenEveryRequestCarriesIt() async throws {
        let queue = try JobQueue.inMemory()
        let job = try await queue.enqueue(try JobRequest(executor: "sum", payloadJSON: #"{"a":1,"b":2}"#))
        let secret = "s3cret-token-0123456789"
        let dashboard = try await RunningDashboard(
            queue: queue, options: .init(storeName: "memory", access: .token(secret)))

        let anonymous = try await dashboard.get("/jobs/\(job.id)")
        #expect(
            anonymous.status == 401 && anonymous.body.contains("action=\"/login\"")
                && !anonymous.body.contains("test-sum"))
        #expect(try await dashboard.get("/jobs/\(job.id)", headers: ["Authorization": "Bearer wrong"]).status == 401)
        #expect(
            try await dashboard.get("/jobs/\(job.id)", headers: ["Authorization": "Bearer \(secret)"]).status == 200)

        let wrong = try await dashboard.post("/login", fields: ["token": "nope"], token: nil)
        #expect(wrong.status == 403 && wrong.header("Set-Cookie") == nil)
        let login = try await dashboard.post("/login", fields: ["token": secret], token: nil)
        #expect(login.status == 303)
        let cookie = try #require(login.header("Set-Cookie"))
        #expect(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"))
        let session = String(cookie.prefix { $0 != ";" })
        let page = try await dashboard.get("/jobs/\(job.id)", headers: ["Cookie": session])
        #expect(page.status == 200)

        let formToken = try #require(
            page.body.range(of: #"name="csrf" value=""#).map {
                String(page.body[$0.upperBound...].prefix { $0 != "\"" })
            })
        let noAccess = try await dashboard.post("/jobs/\(job.id)/cancel", token: formToken)
        #expect(noAccess.status == 403)
        #expect(try await queue.job(job.id)?.state == .ready, "the form token alone is not enough")
        let allowed = try await dashboard.post("/jobs/\(job.id)/cancel", token: formToken, headers: ["Cookie": session])
        #expect(allowed.status == 303)
        #expect(try await queue.job(job.id)?.state == .cancelled)
        #expect(try await dashboard.get("/events/stream").status == 403, "the live stream needs the token too")
    }

    @Test func aLoopbackDashboardAnswersOnlyToLoopbackNames() async throws {
        let queue = try JobQueue.inMemory()
        let dashboard = try await RunningDashboard(
            queue: queue, options: .init(storeName: "memory", access: .loopbackOnly))
        let rebound = try await RawHTTP.exchange(
            port: dashboard.port, "GET / HTTP/1.1\nHost: evil.example\nConnection: close\n\n")
        #expect(rebound.hasPrefix("HTTP/1.1 403"), "\(rebound.prefix(200))")
        let local = try await RawHTTP.exchange(
            port: dashboard.port, "GET / HTTP/1.1\nHost: localhost:\(dashboard.port)\nConnection: close\n\n")
        #expect(local.hasPrefix("HTTP/1.1 200"))
    }

    @Test func listeningBeyondLoopbackNeedsAToken() throws {
        let queue = try JobQueue.inMemory()
        #expect(throws: DashboardError.self) {
            try DashboardServer(
                queue: queue, address: ListenAddress(host: "0.0.0.0", port: 0),
                options: .init(storeName: "memory", access: .loopbackOnly))
        }
        #expect(throws: DashboardError.self, "a short token") {
            try DashboardServer(
                queue: queue, address: ListenAddress(host: "0.0.0.0", port: 0),
                options: .init(storeName: "memory", access: .token("short")))
        }
        _ = try DashboardServer(
            queue: queue, address: ListenAddress(host: "0.0.0.0", port: 0),
            options: .init(storeName: "memory", access: .token("a-long-enough-token")))
    }

    @Test(arguments: TestStore.all) func theLiveStreamCarriesNewEventsWithoutPayloads(store: TestStore) async throws {
        let queue = try await store.open()
        let dashboard = try await RunningDashboard(
            queue: queue, options: .init(storeName: "test", access: .loopbackOnly))
        let secretPayload = #"{"a":1,"b":2,"secret":"do-not-stream"}"#
        // From the newest event on, whenever the request reaches the server (a loaded machine
        // may get it there after the enqueue below).
        let cursor = try await queue.latestEventID()
        async let stream = RawHTTP.exchange(
            port: dashboard.port,
            "GET /events/stream HTTP/1.1\nHost: 127.0.0.1:\(dashboard.port)\nAccept: text/event-stream\nLast-Event-ID: \(cursor)\n\n",
            timeout: 30
        ) { $0.contains("\"kind\":\"enqueued\"") }
        try await Task.sleep(for: .milliseconds(300))
        let job = try await queue.enqueue(
            try JobRequest(executor: "sum", payloadJSON: secretPayload, options: .init(queue: "live")))
        let text = try await stream
        #expect(text.contains("Content-Type: text/event-stream") || text.contains("content-type: text/event-stream"))
        #expect(text.contains("event: job\n") || text.contains("event: job\r\n"))
        #expect(text.contains("\"job\":\(job.id)") && text.contains("\"queue\":\"live\""))
        #expect(!text.contains("do-not-stream"), "no payloads on the stream")
        let resumed = try await RawHTTP.exchange(
            port: dashboard.port,
            "GET /events/stream HTTP/1.1\nHost: 127.0.0.1:\(dashboard.port)\nLast-Event-ID: 0\n\n", timeout: 10
        ) { $0.contains("\"job\":\(job.id)") }
        #expect(resumed.contains("\"job\":\(job.id)"), "Last-Event-ID resumes after that event")
    }

    /// A browser back after events it had not seen were deleted (retention, prune) goes on from
    /// now: new events reach it, rather than a refusal it would reconnect to every 2 seconds.
    @Test func aStreamBehindDeletedEventsGoesOnFromNow() async throws {
        let queue = try JobQueue.inMemory()
        let dashboard = try await RunningDashboard(
            queue: queue, options: .init(storeName: "test", access: .loopbackOnly))
        let old = try await queue.enqueue(try JobRequest(executor: "sum", payloadJSON: #"{"a":1,"b":2}"#))
        try await queue.cancel(old.id)
        try await queue.prune(olderThan: .zero)
        await #expect(throws: JobQueueError.self) { _ = try await queue.events(after: 1) }
        // New jobs keep coming until the stream shows one: it starts from whatever is newest
        // when the request reaches the server.
        let feeder = Task {
            while !Task.isCancelled {
                _ = try? await queue.enqueue(try JobRequest(executor: "sum", payloadJSON: #"{"a":1,"b":2}"#))
                try? await Task.sleep(for: .milliseconds(200))
            }
        }
        defer { feeder.cancel() }
        let text = try await RawHTTP.exchange(
            port: dashboard.port,
            "GET /events/stream HTTP/1.1\nHost: 127.0.0.1:\(dashboard.port)\nLast-Event-ID: 1\n\n", timeout: 30
        ) { $0.contains("\"kind\":\"enqueued\"") }
        #expect(text.contains("\"kind\":\"enqueued\""), "\(text)")
    }
}

/// `jobq dashboard` refuses what it cannot serve safely, before touching anything.
@Suite("jobq dashboard on the command line")
struct DashboardCLITests {
    @Test func refusalsExitTwoAndCreateNothing() async throws {
        let store = try TemporaryStore()
        let missing = try await CLI.run(["dashboard"], db: store.path)
        #expect(missing.status == 2 && missing.stderr.contains("no jobq store at"), "\(missing.stderr)")
        #expect(!FileManager.default.fileExists(atPath: store.path), "no store was created")

        _ = try store.open()
        let wide = try await CLI.run(
            ["dashboard", "--listen", "0.0.0.0:0"], db: store.path, environment: ["JOBQ_DASHBOARD_TOKEN": ""])
        #expect(wide.status == 2 && wide.stderr.contains("without an access token"), "\(wide.stderr)")
        let short = try await CLI.run(["dashboard", "--listen", "0.0.0.0:0", "--token", "abc"], db: store.path)
        #expect(short.status == 2 && short.stderr.contains("at least 16"), "\(short.stderr)")
        let bad = try await CLI.run(["dashboard", "--listen", "localhost:99999"], db: store.path)
        #expect(bad.status == 2 && bad.stderr.contains("--listen"), "\(bad.stderr)")
    }
}
