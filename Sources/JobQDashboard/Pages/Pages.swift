import Foundation
import Hummingbird
import JobQCore
import JobQWebText

/// The page shell, error pages and login, shared by every page.
enum Pages {
    static let sections: [(path: String, title: String)] = [
        ("/", "Queues"), ("/jobs", "Jobs"), ("/workflows", "Workflows"), ("/schedules", "Schedules"),
        ("/triggers", "Triggers"),
        ("/batches", "Batches"), ("/history", "History")
    ]

    /// A whole page: header, navigation, and `body`. `live` names the part the script refreshes
    /// when an event concerns it (see ``Live``).
    static func page(
        title: String, section: String, dashboard: Dashboard, live: Live? = nil, header: String = "", body: String
    ) -> String {
        let navigation = sections.map { item in
            "<a href=\"\(item.path)\"\(item.path == section ? " class=\"current\"" : "")>\(item.title)</a>"
        }.joined()
        let region =
            live.map { live in
                "<div id=\"live\" \(live.attributes)>\(body)</div>"
            } ?? body
        return """
            <!doctype html>
            <html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
            <title>\(HTML.escape(title)) · jobq</title>
            <link rel="stylesheet" href="/assets/dashboard.css"><script src="/assets/dashboard.js" defer></script></head>
            <body><header><a class="brand" href="/">jobq</a><nav>\(navigation)</nav>
            <span class="store" title="the store">\(HTML.escape(dashboard.options.storeName))</span>\(dashboard.options.readOnly ? "<span class=\"badge\">read-only</span>" : "")
            <span id="live-status" class="live-status" title="live updates">live</span></header>
            <main><h1>\(HTML.escape(title))</h1>\(header)\(region)</main></body></html>
            """
    }

    static func html(_ text: String, status: HTTPResponse.Status = .ok) -> Response {
        Response(
            status: status, headers: [.contentType: "text/html; charset=utf-8", .cacheControl: "no-store"],
            body: .init(byteBuffer: ByteBuffer(string: text)))
    }

    static func error(_ status: HTTPResponse.Status, _ message: String, dashboard: Dashboard) -> Response {
        html(
            page(
                title: "\(status.code) \(status.reasonPhrase)", section: "", dashboard: dashboard,
                // A message of several lines (a filter's, with a caret under the place) keeps them.
                body: (message.contains("\n")
                    ? "<pre class=\"error\">\(HTML.escape(message))</pre>"
                    : "<p class=\"error\">\(HTML.escape(message))</p>")
                    + "<p><a href=\"/\">Back to the queues</a></p>"),
            status: status)
    }

    static func login(dashboard: Dashboard, status: HTTPResponse.Status, message: String?) -> Response {
        let note = message.map { "<p class=\"error\">\(HTML.escape($0))</p>" } ?? ""
        let body = """
            \(note)<p>This dashboard needs its access token (the one given to <code>jobq dashboard --token</code> or in <code>JOBQ_DASHBOARD_TOKEN</code>).</p>
            <form method="post" action="/login" class="login"><label>Access token <input type="password" name="token" autocomplete="current-password" required></label>
            <button type="submit">Sign in</button></form>
            """
        return html(page(title: "Sign in", section: "", dashboard: dashboard, body: body), status: status)
    }

    /// A POST form with one button, carrying the form token.
    static func action(
        _ path: String, _ label: String, fields: [String: String] = [:], dashboard: Dashboard, style: String = ""
    ) -> String {
        guard !dashboard.options.readOnly else { return "" }
        let hidden = fields.sorted { $0.key < $1.key }.map {
            "<input type=\"hidden\" name=\"\(HTML.escape($0.key))\" value=\"\(HTML.escape($0.value))\">"
        }.joined()
        return """
            <form method="post" action="\(HTML.escape(path))" class="inline"><input type="hidden" name="csrf" value="\(dashboard.formToken)">\(hidden)<button type="submit" class="\(style)">\(HTML.escape(label))</button></form>
            """
    }

    static func table(_ headers: [String], _ rows: [String], empty: String) -> String {
        guard !rows.isEmpty else { return "<p class=\"muted\">\(HTML.escape(empty))</p>" }
        let head = headers.map { "<th>\(HTML.escape($0))</th>" }.joined()
        return "<table><thead><tr>\(head)</tr></thead><tbody>\(rows.joined())</tbody></table>"
    }

    static func row(_ cells: [String]) -> String {
        "<tr>" + cells.map { "<td>\($0)</td>" }.joined() + "</tr>"
    }

    static func jobLink(_ id: JobID) -> String {
        "<a href=\"/jobs/\(id)\">#\(id)</a>"
    }
}

/// Which events refresh a page's live part: any (lists), one job's, or one workflow's.
struct Live {
    enum Scope {
        case any
        case job(JobID)
        case workflow(WorkflowID)
    }

    let scope: Scope
    /// The URL that answers the live part alone (the page's own URL with `fragment=1`).
    let fragmentURL: String

    var attributes: String {
        var text = "data-live=\"\(HTML.escape(fragmentURL))\""
        switch scope {
        case .any: break
        case .job(let id): text += " data-job=\"\(id)\""
        case .workflow(let id): text += " data-workflow=\"\(id)\""
        }
        return text
    }
}

/// What a page handler answers: the whole page, or its live part alone.
struct PageContent {
    var title: String
    var section: String
    var live: Live?
    /// What stays put above the live part (a filter form).
    var header = ""
    var body: String
    /// The page's figures as JSON, answered for `format=json`; nil for a page without.
    var json: String? = nil

    func response(fragment: Bool, dashboard: Dashboard) -> Response {
        fragment
            ? Pages.html(body)
            : Pages.html(
                Pages.page(title: title, section: section, dashboard: dashboard, live: live, header: header, body: body)
            )
    }
}

/// Bad input in a request: answered with 400 and the message.
struct BadRequest: Error {
    let message: String
}
