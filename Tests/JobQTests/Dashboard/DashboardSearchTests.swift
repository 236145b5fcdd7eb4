import Foundation
import Testing

@testable import JobQCore
@testable import JobQSQL
@testable import JobQSQLite

/// The jobs page's search (the filter language) and its bulk actions over HTTP: the count, a
/// confirmation that shows it, the action behind the form token and the Origin check, and what
/// it did; hostile text escaped; a read-only dashboard offers and does none of it.
@Suite("Web dashboard: search and bulk actions")
struct DashboardSearchTests {
    @Test(arguments: TestStore.all) func searchCountsConfirmsAndActs(store: TestStore) async throws {
        let fixture = try await DashboardFixture.make(store)
        defer { fixture.pool.cancel() }
        let queue = fixture.queue
        var ids: [JobID] = []
        for customer in ["acme", "acme", "acme", "bob"] {
            ids.append(
                try await queue.enqueue(
                    try JobRequest(
                        executor: "fail", payloadJSON: #"{"customer":"\#(customer)","message":"no"}"#,
                        options: .init(queue: "bulk", maxAttempts: 1))
                ).id)
        }
        try await work(queue, queues: ["bulk"])
        let dashboard = try await RunningDashboard(
            queue: queue, options: .init(storeName: "test store", access: .loopbackOnly))
        let token = try await dashboard.formToken()
        let search = #"state:dead /customer = "acme""#
        let encoded = HTMLQuery.encode(search)

        let page = try await dashboard.get("/jobs?where=\(encoded)")
        #expect(page.status == 200)
        #expect(page.body.contains("3 jobs match."), "\(page.body)")
        #expect(page.body.contains(#"value="state:dead /customer = &quot;acme&quot;""#), "the search box keeps it")
        for id in ids.prefix(3) { #expect(page.body.contains("/jobs/\(id)\"")) }
        #expect(!page.body.contains("/jobs/\(ids[3])\""))
        #expect(
            page.body.contains("/jobs/bulk?action=retry&amp;filter=")
                || page.body.contains("/jobs/bulk?action=retry&filter="))
        // The form's fields join the search: this narrows to nothing.
        #expect(try await dashboard.get("/jobs?queue=web&where=\(encoded)").body.contains("0 jobs match."))

        let confirm = try await dashboard.get("/jobs/bulk?action=retry&filter=\(encoded)")
        #expect(confirm.status == 200)
        #expect(confirm.body.contains("<strong>3</strong> jobs now"), "\(confirm.body)")
        #expect(confirm.body.contains(">Retry 3 jobs</button>"))
        #expect(try await queue.count(where: JobFilter("state:dead queue:bulk")) == 4, "a confirmation changes nothing")

        // Refused: no form token, another origin; nothing changes.
        for (fields, headers) in [
            (["action": "retry", "filter": search], [String: String]()),
            (["action": "retry", "filter": search, "csrf": token], ["Origin": "http://evil.example"])
        ] {
            let refused = try await dashboard.post("/jobs/bulk", fields: fields, token: nil, headers: headers)
            #expect(refused.status == 403)
        }
        #expect(try await queue.count(where: JobFilter("state:dead queue:bulk")) == 4)

        // What was confirmed is what is acted on: a matching job enqueued after the confirmation
        // is left alone...
        let confirmedFields = Self.hiddenFields(confirm.body)
        #expect(confirmedFields["count"] == "3", "\(confirm.body)")
        let later = try await queue.enqueue(
            try JobRequest(
                executor: "fail", payloadJSON: #"{"customer":"acme","message":"no"}"#,
                options: .init(queue: "bulk", maxAttempts: 1)))
        try await work(queue, queues: ["bulk"])
        let done = try await dashboard.post(
            "/jobs/bulk", fields: confirmedFields.filter { $0.key != "csrf" }, token: token)
        #expect(done.status == 200)
        #expect(done.body.contains("Retried <strong>3</strong> of 3 matching jobs."), "\(done.body)")
        for id in ids.prefix(3) { #expect(try await queue.job(id)?.state == .ready) }
        #expect(try await queue.job(ids[3])?.state == .dead)
        #expect(try await queue.job(later.id)?.state == .dead, "enqueued after the confirmation")

        // ...and when the jobs confirmed changed meanwhile, nothing is done.
        let stale = Self.hiddenFields(
            try await dashboard.get("/jobs/bulk?action=cancel&filter=\(HTMLQuery.encode("state:ready queue:bulk"))")
                .body)
        #expect(stale["count"] == "3")
        _ = try await queue.cancel(ids[0])
        let refusedStale = try await dashboard.post(
            "/jobs/bulk", fields: stale.filter { $0.key != "csrf" }, token: token)
        #expect(refusedStale.status == 409)
        #expect(refusedStale.body.contains("Nothing was done"), "\(refusedStale.body)")
        #expect(try await queue.count(where: JobFilter("state:ready queue:bulk")) == 2)
        _ = try await queue.retry(ids[0])

        // Skips are shown with why.
        let again = try await dashboard.post(
            "/jobs/bulk",
            fields: Self.hiddenFields(
                try await dashboard.get("/jobs/bulk?action=retry&filter=queue:bulk").body
            ).filter { $0.key != "csrf" }, token: token)
        #expect(again.body.contains("Retried <strong>2</strong> of 5 matching jobs."), "\(again.body)")
        #expect(again.body.contains("<td>3</td><td>ready</td>"))

        // Bad input: a bad search is a 400 that shows where (escaped), an unknown action a 400.
        let bad = try await dashboard.get("/jobs?where=" + HTMLQuery.encode("<script>:x"))
        #expect(bad.status == 400)
        #expect(bad.body.contains("<pre class=\"error\">invalid filter at character 1"), "\(bad.body)")
        #expect(!bad.body.contains("<script>"))
        let unknown = try await dashboard.post(
            "/jobs/bulk", fields: ["action": "drop", "filter": "queue:bulk"], token: token)
        #expect(unknown.status == 400)
        let noFilter = try await dashboard.get("/jobs/bulk?action=delete")
        #expect(noFilter.status == 400)
    }

    /// The hidden fields of a page's first form.
    static func hiddenFields(_ body: String) -> [String: String] {
        var fields: [String: String] = [:]
        for match in body.matches(of: #/<input type="hidden" name="([^"]*)" value="([^"]*)">/#) {
            let value = String(match.2).replacingOccurrences(of: "&quot;", with: "\"")
                .replacingOccurrences(of: "&lt;", with: "<").replacingOccurrences(of: "&gt;", with: ">")
                .replacingOccurrences(of: "&#39;", with: "'").replacingOccurrences(of: "&amp;", with: "&")
            if fields[String(match.1)] == nil { fields[String(match.1)] = value }
        }
        return fields
    }

    @Test func aReadOnlyDashboardOffersNoBulkActionAndRefusesThem() async throws {
        let store = try TemporaryStore()
        let queue = try store.open()
        _ = try await queue.enqueue(try JobRequest(executor: "sum", payloadJSON: #"{"a":1,"b":2}"#))
        let dashboard = try await RunningDashboard(
            queue: queue, options: .init(storeName: "ro", access: .loopbackOnly, readOnly: true))
        let page = try await dashboard.get("/jobs?where=state:ready")
        #expect(page.body.contains("1 job match."))
        #expect(!page.body.contains("/jobs/bulk"))
        let refused = try await dashboard.post(
            "/jobs/bulk", fields: ["action": "cancel", "filter": "state:ready"], token: "x")
        #expect(refused.status == 403)
        #expect(try await queue.count(where: JobFilter("state:ready")) == 1)
    }
}

/// A query parameter's value, percent-encoded.
enum HTMLQuery {
    static func encode(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
    }
}
