import Foundation
import Hummingbird
import JobQCore
import JobQWebText

extension Dashboard {
    /// Jobs newest first, filtered by queue, state, executor and name, a page at a time.
    func jobsPage(_ request: Request) async throws -> PageContent {
        var query = JobQuery(
            queue: Self.parameter(request, "queue"), state: try Self.state(request),
            executor: Self.parameter(request, "executor"),
            name: Self.parameter(request, "name"), limit: options.pageSize)
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
        let filters: [(String, String?)] = [
            ("queue", query.queue), ("state", query.state?.rawValue), ("executor", query.executor), ("name", query.name)
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
            <form method="get" action="/jobs" class="filters">\(field("queue", query.queue))<label>state <select name="state">\(select)</select></label>\(field("executor", query.executor))\(field("name", query.name))<button type="submit">Filter</button> <a href="/jobs">Clear</a></form>
            """
        let table = Pages.table(
            ["Job", "State", "Queue", "Executor", "Name", "Attempt", "Created", "Finished"], rows,
            empty: "No job matches.")
        // The filters stay put while the table refreshes live.
        return PageContent(
            title: "Jobs", section: "/jobs", live: Live(scope: .any, fragmentURL: Self.fragmentURL(request)),
            header: form,
            body: table + "<p class=\"pager\">\(pager)</p>")
    }
}
