import Foundation
import Hummingbird
import JobQCore
import JobQWebText

extension Dashboard {
    /// The jobs page's filters: the fields of its form and its search (`where`, the filter
    /// language of ``JobFilter``).
    static func jobQuery(_ request: Request, limit: Int) throws -> JobQuery {
        var query = JobQuery(
            queue: parameter(request, "queue"), state: try state(request), executor: parameter(request, "executor"),
            name: parameter(request, "name"), limit: limit)
        if let search = parameter(request, "where") { query.filter = try JobFilter(search) }
        return query
    }

    /// The query's fields and search as one filter expression: what a bulk action acts on.
    static func expression(_ query: JobQuery) -> String {
        let fields: [(String, String?)] = [
            ("queue", query.queue), ("state", query.state?.rawValue), ("executor", query.executor), ("name", query.name)
        ]
        let terms = fields.compactMap { name, value in value.map { "\(name):" + JSONText.string($0) } }
        return (terms + [query.filter.expression].filter { !$0.isEmpty }).joined(separator: " ")
    }

    /// Jobs newest first, filtered by queue, state, executor, name and a search in the filter
    /// language, a page at a time; with a search, how many match and the bulk actions.
    func jobsPage(_ request: Request) async throws -> PageContent {
        var query = try Self.jobQuery(request, limit: options.pageSize)
        if let before = Self.parameter(request, "before") {
            guard let id = JobID(before), id > 0 else {
                throw BadRequest(
                    message:
                        "before '\(before)' is not a job id: give the last id of the previous page, a whole number from 1"
                )
            }
            query.before = id
        }
        let jobs = try await queue.jobs(matching: query)
        let rows = jobs.map { job in
            Pages.row([
                Pages.jobLink(job.id), HTML.badge(job.state.rawValue), HTML.escape(job.queue),
                HTML.escape(job.executor),
                job.name.map(HTML.escape) ?? "<span class=\"muted\">–</span>", "\(job.attempt)/\(job.maxAttempts)",
                HTML.time(job.createdAt), HTML.time(job.finishedAt)
            ])
        }
        let search = query.filter.expression.isEmpty ? nil : query.filter.expression
        let filters: [(String, String?)] = [
            ("queue", query.queue), ("state", query.state?.rawValue), ("executor", query.executor),
            ("name", query.name),
            ("where", search)
        ]
        var pager = ""
        if query.before != nil { pager += "<a href=\"/jobs\(HTML.query(filters))\">Newest</a> " }
        if jobs.count == query.limit, let last = jobs.last {
            pager += "<a href=\"/jobs\(HTML.query(filters + [("before", "\(last.id)")]))\" rel=\"next\">Older →</a>"
        }
        let stateOptions = [("", "any state")] + JobState.allCases.map { ($0.rawValue, $0.rawValue) }
        let select = stateOptions.map { value, label in
            "<option value=\"\(value)\"\(value == (query.state?.rawValue ?? "") ? " selected" : "")>\(label)</option>"
        }.joined()
        func field(_ name: String, _ value: String?) -> String {
            "<label>\(name) <input name=\"\(name)\" value=\"\(HTML.escape(value ?? ""))\"></label>"
        }
        let form = """
            <form method="get" action="/jobs" class="filters">\(field("queue", query.queue))<label>state <select name="state">\(select)</select></label>\(field("executor", query.executor))\(field("name", query.name))<label class="search">search <input name="where" size="40" value="\(HTML.escape(search ?? ""))" placeholder="state:dead /customer = &quot;acme&quot; finished&lt;24h"></label><button type="submit">Filter</button> <a href="/jobs">Clear</a></form>
            """
        let table = Pages.table(
            ["Job", "State", "Queue", "Executor", "Name", "Attempt", "Created", "Finished"], rows,
            empty: "No job matches.")
        // The filters stay put while the table refreshes live.
        // Counted only for a search: a count reads every job the indexes cannot rule out.
        var matching = ""
        if search != nil {
            let count = try await queue.count(where: query.combinedFilter)
            matching = "<p class=\"summary\">\(count) job\(count == 1 ? "" : "s") match.</p>"
            if count > 0, !options.readOnly {
                let expression = Self.expression(query)
                let links = BulkAction.allCases.map { action in
                    "<a class=\"button\" href=\"/jobs/bulk\(HTML.query([("action", action.rawValue), ("filter", expression)]))\">"
                        + "\(action.rawValue.capitalized) all…</a>"
                }
                matching += "<p class=\"bulk\">\(links.joined(separator: " "))</p>"
            }
        }
        return PageContent(
            title: "Jobs", section: "/jobs", live: Live(scope: .any, fragmentURL: Self.fragmentURL(request)),
            header: form,
            body: matching + table + "<p class=\"pager\">\(pager)</p>")
    }
}
