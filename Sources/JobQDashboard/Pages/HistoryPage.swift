import Foundation
import Hummingbird
import JobQCore
import JobQWebText

extension Dashboard {
    /// The windows the history page offers: how long, and in how many buckets.
    static let historyWindows: [(name: String, window: Duration, buckets: Int)] = [
        ("1h", .seconds(3600), 60), ("24h", .seconds(86_400), 96), ("7d", .seconds(7 * 86_400), 168)
    ]

    /// The store's history over a window, as charts (and as JSON with `format=json`): finished
    /// jobs by outcome, wait and run times, and the backlog; for one queue or executor, or all.
    func historyPage(_ request: Request) async throws -> PageContent {
        let name = Self.parameter(request, "window") ?? "1h"
        guard let choice = Self.historyWindows.first(where: { $0.name == name }) else {
            throw BadRequest(
                message: "window '\(name)' is not one of: \(Self.historyWindows.map(\.name).joined(separator: ", "))")
        }
        let queueName = Self.parameter(request, "queue")
        let executor = Self.parameter(request, "executor")
        let history = try await queue.history(
            over: choice.window, buckets: choice.buckets, queue: queueName, executor: executor)
        let charts = HistoryCharts(history, filter: Self.historyFilter(queue: queueName, executor: executor))
        let windows = Self.historyWindows.map { item in
            var query = ["window=\(item.name)"]
            if let queueName { query.append("queue=\(Self.queryValue(queueName))") }
            if let executor { query.append("executor=\(Self.queryValue(executor))") }
            let link = "/history?" + query.joined(separator: "&")
            return item.name == name
                ? "<strong>\(item.name)</strong>" : "<a href=\"\(HTML.escape(link))\">\(item.name)</a>"
        }.joined(separator: " · ")
        let header = """
            <form class="filters" method="get" action="/history"><input type="hidden" name="window" value="\(HTML.escape(name))">\
            <label>Queue <input name="queue" value="\(HTML.escape(queueName ?? ""))"></label> \
            <label>Executor <input name="executor" value="\(HTML.escape(executor ?? ""))"></label> \
            <button type="submit">Show</button></form><p class="windows">Last \(windows)</p>
            """
        var body = charts.outcomes + charts.waits + charts.runs
        // The backlog is sampled by queue: an executor's history has none.
        body +=
            executor == nil ? charts.backlog : "<p class=\"muted\">The backlog is kept by queue, not by executor.</p>"
        return PageContent(
            title: "History", section: "/history", live: Live(scope: .any, fragmentURL: Self.fragmentURL(request)),
            header: header, body: body, json: history.json)
    }

    /// The filter terms of a queue and an executor, for the links to a bucket's jobs.
    static func historyFilter(queue: String?, executor: String?) -> String {
        [queue.map { "queue:\(JSONText.string($0))" }, executor.map { "executor:\(JSONText.string($0))" }]
            .compactMap { $0 }.joined(separator: " ")
    }

    static func queryValue(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
    }
}
