import Foundation
import Testing

@testable import JobQCore
@testable import JobQDashboard
@testable import JobQSQL

/// A client of the HTTP API in the tests: requests to a running dashboard with a bearer token.
struct APIClient {
    let dashboard: RunningDashboard
    let token: String?

    func call(_ method: String, _ path: String, body: String? = nil, headers: [String: String] = [:]) async throws
        -> (status: Int, json: [String: Any], text: String)
    {
        var all = headers
        if let token, all["Authorization"] == nil { all["Authorization"] = "Bearer \(token)" }
        if body != nil, all["Content-Type"] == nil { all["Content-Type"] = "application/json" }
        let response = try await HTTP.request(method, dashboard.base + path, headers: all, body: body)
        let json = (try? JSONSerialization.jsonObject(with: Data(response.body.utf8))) as? [String: Any] ?? [:]
        return (response.status, json, response.body)
    }

    /// The `error` of a refusal: its message and the field it names.
    static func error(_ json: [String: Any]) -> (message: String, field: String?) {
        let error = json["error"] as? [String: Any] ?? [:]
        return (error["message"] as? String ?? "", error["field"] as? String)
    }
}

/// The HTTP API through a real server, on both stores: what each endpoint does to the store,
/// and what it refuses (no token, a revoked one, a missing scope, bad input, hostile bodies),
/// leaving the store as it was.
@Suite("HTTP API")
struct HTTPAPITests {
    static func serve(_ queue: JobQueue, access: Dashboard.Access = .loopbackOnly) async throws -> RunningDashboard {
        try await RunningDashboard(queue: queue, options: .init(storeName: "test", access: access))
    }

    @Test(arguments: TestStore.all) func requestsWithoutAValidTokenOrScopeAreRefused(store: TestStore) async throws {
        let queue = try await store.open()
        let dashboard = try await Self.serve(queue)
        let reader = try await queue.addAPIToken(named: "reader", scopes: [.read])
        let body = #"{"executor": "echo", "payload": {}}"#

        let none = try await APIClient(dashboard: dashboard, token: nil).call("POST", "/api/v1/jobs", body: body)
        #expect(
            none.status == 401 && APIClient.error(none.json).message.contains("Authorization: Bearer"), "\(none.text)")
        let forged = try await APIClient(dashboard: dashboard, token: "jobq_" + String(repeating: "a", count: 40))
            .call("GET", "/api/v1/jobs")
        #expect(forged.status == 401)
        let scope = try await APIClient(dashboard: dashboard, token: reader.secret).call(
            "POST", "/api/v1/jobs", body: body)
        #expect(
            scope.status == 403 && APIClient.error(scope.json).message.contains("no 'enqueue' scope"), "\(scope.text)")
        #expect(
            try await APIClient(dashboard: dashboard, token: reader.secret).call("GET", "/api/v1/jobs").status == 200)
        try await queue.revokeAPIToken(named: "reader")
        #expect(
            try await APIClient(dashboard: dashboard, token: reader.secret).call("GET", "/api/v1/jobs").status == 401)
        #expect(try await queue.jobs().isEmpty, "nothing refused reached the store")
    }

    @Test(arguments: TestStore.all) func theDashboardsAccessAndTheAPIsTokensAreApart(store: TestStore) async throws {
        let queue = try await store.open()
        let access = "a-dashboard-access-token-long-enough"
        let dashboard = try await Self.serve(queue, access: .token(access))
        let api = try await queue.addAPIToken(named: "all", scopes: Set(APIScope.allCases))
        // The dashboard's token opens no API request; an API token opens no page.
        #expect(try await APIClient(dashboard: dashboard, token: access).call("GET", "/api/v1/jobs").status == 401)
        #expect(try await APIClient(dashboard: dashboard, token: api.secret).call("GET", "/api/v1/jobs").status == 200)
        let page = try await dashboard.get("/jobs", headers: ["Authorization": "Bearer \(api.secret)"])
        #expect(page.status == 401 || page.status == 403, "\(page.status)")
        // A forged Origin or Host changes nothing for a bearer request.
        let forged = try await APIClient(dashboard: dashboard, token: api.secret)
            .call("GET", "/api/v1/jobs", headers: ["Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"])
        #expect(forged.status == 200)
    }

    @Test(arguments: TestStore.all) func jobsAreEnqueuedReadListedAndActedOn(store: TestStore) async throws {
        let queue = try await store.open()
        let dashboard = try await Self.serve(queue)
        let api = APIClient(
            dashboard: dashboard,
            token: try await queue.addAPIToken(named: "all", scopes: Set(APIScope.allCases)).secret)

        let one = try await api.call(
            "POST", "/api/v1/jobs",
            body:
                #"{"executor": "sum", "payload": {"a": 1, "b": 2.50}, "queue": "api", "priority": 3, "unique": "k:1"}"#)
        #expect(one.status == 201, "\(one.text)")
        let job = try #require(one.json["job"] as? [String: Any])
        let id = try #require(job["id"] as? Int)
        #expect(one.json["existed"] as? Bool == false && job["queue"] as? String == "api")
        let stored = try #require(try await queue.job(JobID(id)))
        #expect(stored.payloadJSON == #"{"a":1,"b":2.5}"#, "the payload as `jobq enqueue --file` stores it")
        #expect(stored.priority == 3 && stored.uniqueKey == "k:1")
        // The same unique key: that job, not a new one (a retried request's idempotency).
        let repeated = try await api.call("POST", "/api/v1/jobs", body: #"{"executor": "sum", "unique": "k:1"}"#)
        #expect(repeated.status == 200 && repeated.json["existed"] as? Bool == true, "\(repeated.text)")
        #expect((repeated.json["job"] as? [String: Any])?["id"] as? Int == id)

        let batch = try await api.call(
            "POST", "/api/v1/jobs/batch",
            body:
                #"{"jobs": [{"executor": "echo", "payload": {"n": 1}}, {"executor": "echo", "payload": {"n": 2}, "queue": "api"}]}"#
        )
        #expect(batch.status == 201 && (batch.json["jobs"] as? [Any])?.count == 2, "\(batch.text)")
        #expect(try await queue.jobs().count == 3)

        let got = try await api.call("GET", "/api/v1/jobs/\(id)")
        #expect(got.status == 200 && (got.json["job"] as? [String: Any])?["executor"] as? String == "sum")
        #expect(try await api.call("GET", "/api/v1/jobs/999999").status == 404)
        let page = try await api.call("GET", "/api/v1/jobs?where=queue:api&limit=1")
        #expect(page.status == 200, "\(page.text)")
        let listed = try #require(page.json["jobs"] as? [[String: Any]])
        #expect(listed.count == 1 && listed[0]["queue"] as? String == "api")
        let next = try #require(page.json["next"] as? Int)
        let rest = try await api.call("GET", "/api/v1/jobs?where=queue:api&limit=1&before=\(next)")
        #expect((rest.json["jobs"] as? [[String: Any]])?.first?["id"] as? Int == id)

        let cancelled = try await api.call("POST", "/api/v1/jobs/\(id)/cancel")
        #expect(
            cancelled.status == 200 && (cancelled.json["job"] as? [String: Any])?["state"] as? String == "cancelled")
        #expect(try await queue.job(JobID(id))?.state == .cancelled)
        let cancelledAgain = try await api.call("POST", "/api/v1/jobs/\(id)/cancel")
        #expect(cancelledAgain.status == 409, "\(cancelledAgain.text)")
        let retried = try await api.call("POST", "/api/v1/jobs/\(id)/retry")
        #expect(retried.status == 200)
        #expect(try await queue.job(JobID(id))?.state == .ready)

        #expect(try await api.call("POST", "/api/v1/queues/api/pause").json["paused"] as? Bool == true)
        #expect(try await queue.status().queues.first { $0.name == "api" }?.paused == true)
        #expect(try await api.call("POST", "/api/v1/queues/api/resume").status == 200)
        #expect(try await queue.status().queues.first { $0.name == "api" }?.paused == false)
    }

    @Test(arguments: TestStore.all) func aResultIsWaitedForAndEventsAndSignalsGoThrough(store: TestStore) async throws {
        let queue = try await store.open()
        let dashboard = try await Self.serve(queue)
        let api = APIClient(
            dashboard: dashboard, token: try await queue.addAPIToken(named: "p", scopes: [.enqueue, .read]).secret)
        let job = try await queue.enqueue(try JobRequest(executor: "sum", payloadJSON: #"{"a": 2, "b": 3}"#))
        let notYet = try await api.call("GET", "/api/v1/jobs/\(job.id)/result?wait=1")
        #expect(notYet.status == 202 && notYet.json["finished"] as? Bool == false, "\(notYet.text)")
        // The wait ends when a worker finishes the job, not at its bound.
        let started = ContinuousClock.now
        async let waited = api.call("GET", "/api/v1/jobs/\(job.id)/result?wait=60")
        try await pause(0.3)
        _ = try await work(queue)
        let done = try await waited
        #expect(done.status == 200 && done.json["finished"] as? Bool == true, "\(done.text)")
        #expect(((done.json["job"] as? [String: Any])?["result"] as? [String: Any])?["sum"] as? Int == 5)
        #expect(ContinuousClock.now - started < .seconds(50))
        let badWait = try await api.call("GET", "/api/v1/jobs/\(job.id)/result?wait=600")
        #expect(badWait.status == 400 && APIClient.error(badWait.json).field == "wait", "\(badWait.text)")

        try await queue.addTrigger(
            Trigger(event: "paid", task: "receipt", request: try JobRequest(executor: "echo", payloadJSON: "{}")))
        let emitted = try await api.call("POST", "/api/v1/events", body: #"{"name": "paid", "payload": {"order": 7}}"#)
        #expect(emitted.status == 201 && (emitted.json["jobs"] as? [Any])?.count == 1, "\(emitted.text)")
        let unknownKey = try await api.call("POST", "/api/v1/events", body: #"{"name": "paid", "extra": 1}"#)
        #expect(unknownKey.status == 400 && APIClient.error(unknownKey.json).field == "extra", "\(unknownKey.text)")

        let history = try await api.call("GET", "/api/v1/history?window=1h&buckets=12")
        let buckets = try #require(history.json["buckets"] as? [[String: Any]], "\(history.text)")
        #expect(buckets.count == 12 && buckets.compactMap { $0["succeeded"] as? Int }.reduce(0, +) == 1)
        let badWindow = try await api.call("GET", "/api/v1/history?window=soon")
        #expect(badWindow.status == 400 && APIClient.error(badWindow.json).field == "window")

        let waiting = try await queue.enqueue(try JobRequest(executor: "echo", payloadJSON: "{}"))
        let signal = try await api.call(
            "POST", "/api/v1/jobs/\(waiting.id)/signals", body: #"{"name": "go", "payload": {"ok": true}}"#)
        #expect(signal.status == 201 && signal.json["signal"] is Int, "\(signal.text)")
        let noName = try await api.call("POST", "/api/v1/jobs/\(waiting.id)/signals", body: #"{"payload": 1}"#)
        #expect(noName.status == 400 && APIClient.error(noName.json).field == "name")
    }

    @Test(arguments: TestStore.all) func badAndHostileBodiesAreRefusedAndChangeNothing(store: TestStore) async throws {
        let queue = try await store.open()
        let dashboard = try await Self.serve(queue)
        let api = APIClient(
            dashboard: dashboard, token: try await queue.addAPIToken(named: "e", scopes: [.enqueue, .read]).secret)
        func refused(_ path: String, _ body: String, headers: [String: String] = [:]) async throws -> (
            Int, String?, String
        ) {
            let answer = try await api.call("POST", path, body: body, headers: headers)
            return (answer.status, APIClient.error(answer.json).field, APIClient.error(answer.json).message)
        }
        let noExecutor = try await refused("/api/v1/jobs", #"{"payload": {}}"#)
        #expect(noExecutor.0 == 400 && noExecutor.2.contains("executor"), "\(noExecutor)")
        let unknown = try await refused("/api/v1/jobs", #"{"executor": "echo", "priorty": 1}"#)
        #expect(unknown.0 == 400 && unknown.2.contains("priorty"), "\(unknown)")
        #expect(try await refused("/api/v1/jobs", "{not json").0 == 400)
        let deep = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        let nested = try await refused("/api/v1/jobs", #"{"executor": "echo", "payload": \#(deep)}"#)
        #expect(nested.0 == 400 && nested.2.contains("levels deep"), "\(nested)")
        let nestedBatch = try await refused("/api/v1/jobs/batch", #"{"jobs": \#(deep)}"#)
        #expect(nestedBatch.0 == 400, "\(nestedBatch)")
        let huge = #"{"executor": "echo", "payload": {"x": ""# + String(repeating: "x", count: 3 << 20) + #""}}"#
        #expect(try await refused("/api/v1/jobs", huge).0 == 413)
        #expect(
            try await refused("/api/v1/jobs", #"{"executor": "echo"}"#, headers: ["Content-Type": "text/plain"]).0
                == 415)
        let tooMany =
            #"{"jobs": ["# + Array(repeating: #"{"executor": "echo"}"#, count: 1001).joined(separator: ",") + "]}"
        let many = try await refused("/api/v1/jobs/batch", tooMany)
        #expect(many.0 == 400 && many.1 == "jobs" && many.2.contains("1 to 1000"), "\(many)")
        let oneBad = try await refused(
            "/api/v1/jobs/batch", #"{"jobs": [{"executor": "echo"}, {"executor": "echo", "maxAttempts": "x"}]}"#)
        #expect(oneBad.0 == 400 && oneBad.1 == "jobs[1]", "\(oneBad)")
        let badLimit = try await api.call("GET", "/api/v1/jobs?limit=0")
        #expect(badLimit.status == 400 && APIClient.error(badLimit.json).field == "limit")
        let badFilter = try await api.call("GET", "/api/v1/jobs?where=state:%22")
        #expect(badFilter.status == 400 && APIClient.error(badFilter.json).field == "where", "\(badFilter.text)")
        let badID = try await api.call("GET", "/api/v1/jobs/abc")
        #expect(badID.status == 400 && APIClient.error(badID.json).field == "id")
        #expect(try await queue.jobs().isEmpty, "no refused request stored a job")
    }

    /// The OpenAPI document describes exactly the endpoints the server mounts, each with the
    /// scope it checks.
    @Test func theOpenAPIDocumentDescribesEveryEndpointAndNoOther() async throws {
        let queue = try JobQueue.inMemory()
        let dashboard = try await Self.serve(queue)
        let token = try await queue.addAPIToken(named: "r", scopes: [.read]).secret
        let served = try await APIClient(dashboard: dashboard, token: token).call("GET", "/api/v1/openapi.json")
        #expect(served.status == 200)
        #expect(served.json["openapi"] as? String == "3.1.0")
        let paths = try #require(served.json["paths"] as? [String: [String: Any]])
        var documented = Set<String>()
        for (path, operations) in paths {
            for (method, operation) in operations {
                let scope = (operation as? [String: Any])?["x-jobq-scope"] as? String ?? "any"
                documented.insert("\(method.uppercased()) \(path) \(scope)")
            }
        }
        let mounted = Set(HTTPAPI.endpoints.map { "\($0.method.rawValue) \($0.path) \($0.scope?.rawValue ?? "any")" })
        #expect(
            documented == mounted,
            "only documented: \(documented.subtracting(mounted)); only mounted: \(mounted.subtracting(documented))")
    }
}
