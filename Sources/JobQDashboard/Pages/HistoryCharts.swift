import Foundation
import JobQCore
import JobQWebText

/// A ``History`` drawn as server-side SVG charts, readable without colour: each series has a
/// pattern or a dash of its own and a legend that names it, every bar and point a title with its
/// figures, and each bucket of finished jobs links to the jobs behind it (the filter language).
///
/// ```swift
/// let charts = HistoryCharts(history, filter: "queue:mail")
/// html += charts.outcomes + charts.waits + charts.runs + charts.backlog
/// ```
struct HistoryCharts {
    let history: History
    /// Terms added to each bucket's link (the page's queue), or empty.
    let filter: String

    init(_ history: History, filter: String = "") {
        self.history = history
        self.filter = filter
    }

    static let width = 720.0
    static let height = 160.0
    /// Room for the y axis's labels on the left and the times below.
    static let left = 48.0
    static let bottom = 18.0

    private var plotWidth: Double { Self.width - Self.left - 4 }
    private var slot: Double { plotWidth / Double(max(history.buckets.count, 1)) }
    private func x(_ index: Int) -> Double { Self.left + Double(index) * slot }

    /// Finished per bucket by outcome: stacked bars, each a link to its jobs.
    var outcomes: String {
        let series: [(name: String, css: String, value: (History.Bucket) -> Int)] = [
            ("succeeded", "h-succeeded", { $0.succeeded }), ("retried", "h-retried", { $0.retried }),
            ("dead", "h-dead", { $0.dead }), ("cancelled", "h-cancelled", { $0.cancelled })
        ]
        let top = max(history.buckets.map(\.finished).max() ?? 0, 1)
        var marks = ""
        for (index, bucket) in history.buckets.enumerated() where bucket.finished > 0 {
            var base = Self.height - Self.bottom
            var rects = ""
            for item in series {
                let value = item.value(bucket)
                guard value > 0 else { continue }
                let height = Double(value) / Double(top) * (Self.height - Self.bottom - 8)
                base -= height
                rects +=
                    "<rect class=\"\(item.css)\" x=\"\(f(x(index) + 1))\" y=\"\(f(base))\" width=\"\(f(max(slot - 2, 1)))\" height=\"\(f(height))\"/>"
            }
            let title =
                "\(Self.clock(bucket.start)): \(bucket.succeeded) succeeded, \(bucket.retried) retried, "
                + "\(bucket.dead) dead, \(bucket.cancelled) cancelled"
            marks +=
                "<a href=\"\(HTML.escape(link(bucket)))\" class=\"h-bucket\"><title>\(HTML.escape(title))</title>\(rects)</a>"
        }
        return chart(
            "Finished per \(bucketName), by outcome", top: Double(top), unit: "", marks: marks,
            legend: series.map { ($0.name, $0.css) })
    }

    /// How long jobs waited to start: p50, p95 and the longest, per bucket.
    var waits: String {
        times("Wait from run time to start", p50: \.waitP50, p95: \.waitP95, max: \.waitMax)
    }

    /// How long attempts ran: p50, p95 and the longest, per bucket.
    var runs: String {
        times("Run time", p50: \.runP50, p95: \.runP95, max: \.runMax)
    }

    /// Unfinished jobs by state at each bucket's last sample: a cumulative flow.
    var backlog: String {
        let states = History.backlogStates
        let totals = history.buckets.map { bucket in states.reduce(0) { $0 + (bucket.backlog[$1] ?? 0) } }
        let top = max(totals.max() ?? 0, 1)
        var marks = ""
        var lower = Array(repeating: 0, count: history.buckets.count)
        for state in states {
            var upper = lower
            for (index, bucket) in history.buckets.enumerated() { upper[index] += bucket.backlog[state] ?? 0 }
            // One area per state, between the states below it and itself.
            var points: [String] = []
            for index in history.buckets.indices {
                points.append("\(f(x(index) + slot / 2)),\(f(y(Double(upper[index]), top: Double(top))))")
            }
            for index in history.buckets.indices.reversed() {
                points.append("\(f(x(index) + slot / 2)),\(f(y(Double(lower[index]), top: Double(top))))")
            }
            marks +=
                "<polygon class=\"h-\(state.rawValue)\" points=\"\(points.joined(separator: " "))\"><title>\(state.rawValue)</title></polygon>"
            lower = upper
        }
        for (index, bucket) in history.buckets.enumerated() where totals[index] > 0 {
            let title = states.map { "\(bucket.backlog[$0] ?? 0) \($0.rawValue)" }.joined(separator: ", ")
            marks +=
                "<rect class=\"h-hover\" x=\"\(f(x(index)))\" y=\"0\" width=\"\(f(slot))\" height=\"\(f(Self.height - Self.bottom))\"><title>\(HTML.escape("\(Self.clock(bucket.start)): \(title)"))</title></rect>"
        }
        return chart(
            "Backlog (unfinished jobs by state)", top: Double(top), unit: "", marks: marks,
            legend: states.map { ($0.rawValue, "h-\($0.rawValue)") })
    }

    private func times(
        _ name: String, p50: KeyPath<History.Bucket, Double?>, p95: KeyPath<History.Bucket, Double?>,
        max maximum: KeyPath<History.Bucket, Double?>
    ) -> String {
        let top = max(history.buckets.compactMap { $0[keyPath: maximum] }.max() ?? 0, 0.001)
        var marks = ""
        for (label, path, css) in [("max", maximum, "h-max"), ("p95", p95, "h-p95"), ("p50", p50, "h-p50")] {
            var points: [String] = []
            for (index, bucket) in history.buckets.enumerated() {
                guard let value = bucket[keyPath: path] else { continue }
                let point = (x(index) + slot / 2, y(value, top: top))
                points.append("\(f(point.0)),\(f(point.1))")
                marks +=
                    "<circle class=\"\(css)\" cx=\"\(f(point.0))\" cy=\"\(f(point.1))\" r=\"2.5\"><title>\(HTML.escape("\(Self.clock(bucket.start)): \(label) \(Self.seconds(value))"))</title></circle>"
            }
            if points.count > 1 {
                marks = "<polyline class=\"\(css)\" points=\"\(points.joined(separator: " "))\"/>" + marks
            }
        }
        return chart(
            name + " (p50, p95, longest)", top: top, unit: "s", marks: marks,
            legend: [("p50", "h-p50"), ("p95", "h-p95"), ("longest", "h-max")])
    }

    /// A chart's frame: title, legend, y axis from 0 to `top`, the window's first and last times.
    private func chart(_ title: String, top: Double, unit: String, marks: String, legend: [(String, String)]) -> String
    {
        let label = unit == "s" ? Self.seconds(top) : String(Int(top))
        let keys = legend.map { name, css in
            "<span class=\"h-key\"><svg width=\"14\" height=\"10\" aria-hidden=\"true\"><rect class=\"\(css)\" width=\"14\" height=\"10\"/></svg>\(HTML.escape(name))</span>"
        }.joined()
        let end = history.start.addingTimeInterval(history.bucketSeconds * Double(history.buckets.count))
        let base = Self.height - Self.bottom
        return """
            <figure class="history-chart"><figcaption>\(HTML.escape(title)) \(keys)</figcaption>\
            <svg class="history" xmlns="http://www.w3.org/2000/svg" width="\(f(Self.width))" height="\(f(Self.height))" \
            viewBox="0 0 \(f(Self.width)) \(f(Self.height))" role="img" aria-label="\(HTML.escape(title))">\
            <line class="h-axis" x1="\(f(Self.left))" y1="\(f(base))" x2="\(f(Self.width - 4))" y2="\(f(base))"/>\
            <line class="h-axis" x1="\(f(Self.left))" y1="4" x2="\(f(Self.left))" y2="\(f(base))"/>\
            <text class="h-label" x="\(f(Self.left - 4))" y="12" text-anchor="end">\(HTML.escape(label))</text>\
            <text class="h-label" x="\(f(Self.left - 4))" y="\(f(base))" text-anchor="end">0</text>\
            <text class="h-label" x="\(f(Self.left))" y="\(f(Self.height - 4))">\(HTML.escape(Self.clock(history.start)))</text>\
            <text class="h-label" x="\(f(Self.width - 4))" y="\(f(Self.height - 4))" text-anchor="end">\(HTML.escape(Self.clock(end)))</text>\
            \(marks)</svg></figure>
            """
    }

    /// The jobs behind a bucket: those that finished in it (and the page's own terms).
    func link(_ bucket: History.Bucket) -> String {
        let end = bucket.start.addingTimeInterval(history.bucketSeconds)
        let terms =
            (filter.isEmpty ? "" : filter + " ")
            + "finished>=\(ISO8601.string(bucket.start)) finished<\(ISO8601.string(end))"
        return "/jobs?where=" + (terms.addingPercentEncoding(withAllowedCharacters: CharacterSet.alphanumerics) ?? "")
    }

    private var bucketName: String {
        switch history.bucketSeconds {
        case 60: "minute"
        case 3600: "hour"
        default: DurationParser.format(.seconds(history.bucketSeconds))
        }
    }

    private func y(_ value: Double, top: Double) -> Double {
        let base = Self.height - Self.bottom
        return base - min(value / top, 1) * (base - 8)
    }

    private func f(_ value: Double) -> String { String(format: "%.1f", value) }

    /// A time as the charts write it: `2026-11-29 09:30 UTC`.
    static func clock(_ date: Date) -> String {
        String(ISO8601.string(date).prefix(16)).replacingOccurrences(of: "T", with: " ") + " UTC"
    }

    static func seconds(_ value: Double) -> String {
        value < 1 ? String(format: "%.0f ms", value * 1000) : String(format: value < 10 ? "%.2f s" : "%.0f s", value)
    }
}
