import Foundation
import Hummingbird
import JobQCore
import JobQWebText

extension Dashboard {
    /// Retry, cancel or delete every job a filter matches: a confirmation page that shows the
    /// count (GET), then the action (POST, with the form token) and what it did.
    func addBulkRoutes<Context: RequestContext>(to router: Router<Context>) {
        router.get("/jobs/bulk") { request, context -> Response in
            do {
                return try await bulkConfirmation(request).response(fragment: false, dashboard: self)
            } catch {
                return try failure(error, request: request, context: context)
            }
        }
        router.post("/jobs/bulk") { request, context -> Response in
            do {
                let form = try await Self.form(request)
                if let refusal = tokenRefusal(form) { return refusal }
                let action = try Self.bulkAction(form["action"])
                let text = try Self.field(form, "filter")
                let filter = try JobFilter(text)
                // What the person confirmed: the count they saw, of the jobs up to the newest then.
                guard let through = JobID(try Self.field(form, "through")),
                    let confirmed = Int(try Self.field(form, "count"))
                else {
                    throw BadRequest(message: "the confirmation's job bound and count must be whole numbers")
                }
                let count = try await queue.count(where: filter.through(through))
                guard count == confirmed else {
                    let again = "/jobs/bulk" + HTML.query([("action", action.rawValue), ("filter", text)])
                    return Pages.html(
                        Pages.page(
                            title: "Nothing was done", section: "/jobs", dashboard: self,
                            body: """
                                <p class="refused">Nothing was done: <code>\(HTML.escape(text))</code> now matches \(count) job\(count == 1 ? "" : "s") of those you were shown, not the \(confirmed) you confirmed (jobs changed meanwhile).</p>
                                <p><a href="\(again)">Review the \(action.rawValue) again</a></p>
                                """), status: .conflict)
                }
                let report = try await queue.perform(action, where: filter, through: through)
                return Pages.html(
                    Pages.page(
                        title: "\(action.rawValue.capitalized) done", section: "/jobs", dashboard: self,
                        body: Self.bulkReport(report)))
            } catch {
                return try failure(error, request: request, context: context)
            }
        }
    }

    private func bulkConfirmation(_ request: Request) async throws -> PageContent {
        let action = try Self.bulkAction(Self.parameter(request, "action"))
        guard let text = Self.parameter(request, "filter") else {
            throw BadRequest(message: "a bulk action needs a filter: search the jobs page first")
        }
        let filter = try JobFilter(text)
        // The newest job now bounds what the count covers and what the action may act on.
        let newest = try await queue.newestJobID() ?? 0
        let count = try await queue.count(where: filter.through(newest))
        let verb = action.rawValue
        let back = "/jobs" + HTML.query([("where", text)])
        guard count > 0 else {
            return PageContent(
                title: "Nothing to \(verb)", section: "/jobs", live: nil,
                body: "<p>No job matches <code>\(HTML.escape(text))</code>.</p><p><a href=\"\(back)\">Back</a></p>")
        }
        let body = """
            <p class="confirm">\(verb.capitalized) every job matching <code>\(HTML.escape(text))</code>: <strong>\(count)</strong> job\(count == 1 ? "" : "s") now. Jobs the action refuses (\(Self.refusals(action))) are skipped and counted.</p>
            \(Pages.action("/jobs/bulk", "\(verb.capitalized) \(count) job\(count == 1 ? "" : "s")", fields: ["action": verb, "filter": text, "through": String(newest), "count": String(count)], dashboard: self))
            <p><a href="\(back)">Cancel</a></p>
            """
        return PageContent(title: "\(verb.capitalized) \(count) jobs?", section: "/jobs", live: nil, body: body)
    }

    private static func refusals(_ action: BulkAction) -> String {
        switch action {
        case .retry: "jobs not failed, dead or cancelled"
        case .cancel: "jobs already finished"
        case .delete: "unfinished jobs, workflow steps, lane members"
        }
    }

    static func bulkAction(_ text: String?) throws -> BulkAction {
        guard let text, let action = BulkAction(rawValue: text) else {
            throw BadRequest(
                message: "the action must be one of \(BulkAction.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        return action
    }

    static func bulkReport(_ report: BulkActionReport) -> String {
        let past = ["retry": "Retried", "cancel": "Cancelled", "delete": "Deleted"][report.action.rawValue] ?? ""
        var body =
            "<p class=\"summary\">\(past) <strong>\(report.changed)</strong> of \(report.matched) matching job\(report.matched == 1 ? "" : "s").</p>"
        let rows = report.skippedByReason.sorted { $0.value > $1.value }.map { reason, count in
            Pages.row(["\(count)", HTML.escape(reason), HTML.escape(report.exampleRefusals[reason] ?? "")])
        }
        if !rows.isEmpty { body += Pages.table(["Skipped", "Why", "For example"], rows, empty: "") }
        body += "<p><a href=\"/jobs\(HTML.query([("where", report.filter)]))\">The jobs it matched</a></p>"
        return body
    }
}
