import Foundation
import JobQCore
import JobQWebText

extension Dashboard {
    /// A durable function's record on its job's page: each step, sleep, wait and call in the
    /// order its code reached them, with its state, time and result (the names and results are
    /// the user's: escaped, and results capped).
    static func stepsSection(_ steps: [FunctionStep], job: Job, now: Date = Date()) -> String {
        guard !steps.isEmpty else { return "" }
        let timeline = StepTimeline(steps, functionEnded: job.state.isFinal, now: now)
        let rows = steps.enumerated().map { index, step in
            let (state, at) = step.standing(isLast: index == steps.count - 1, functionEnded: job.state.isFinal)
            let children = step.children.map(Pages.jobLink).joined(separator: " ")
            let result =
                step.resultJSON.map { "<code>\(HTML.escape(HTML.capped($0, limit: eventDataLimit)))</code>" } ?? ""
            return Pages.row([
                "\(step.position)", HTML.escape(step.kind.rawValue), HTML.escape(step.label), HTML.badge(state),
                HTML.time(at), timeline.bar(index), children.isEmpty ? result : children + " " + result
            ])
        }
        return "<h2>Steps</h2>"
            + Pages.table(
                ["#", "Kind", "Name", "State", "At", timeline.heading, "Result"], rows, empty: "No steps recorded.")
    }
}

extension Dashboard {
    /// A form that sends a durable function a signal, shown while the function has not ended
    /// (a signal sent before its wait is kept for it): the name its wait is for, prefilled when
    /// it waits for one, and an optional JSON payload. The store checks both; a bad one is a
    /// 400 that says what was wrong, and nothing is sent.
    func signalForm(_ steps: [FunctionStep], job: Job) -> String {
        guard !options.readOnly, !job.state.isFinal, !steps.isEmpty else { return "" }
        let waitingFor = steps.last.flatMap { $0.kind == .signal && $0.finishedAt == nil ? $0.name : nil } ?? ""
        return "<h2>Send a signal</h2>"
            + "<form method=\"post\" action=\"/jobs/\(job.id)/signal\" class=\"filters\">"
            + "<input type=\"hidden\" name=\"csrf\" value=\"\(formToken)\">"
            + "<label>Name<input name=\"name\" value=\"\(HTML.escape(waitingFor))\" required maxlength=\"200\"></label>"
            + "<label>Payload (JSON, optional)<input name=\"payload\" placeholder=\"{&quot;approved&quot;: true}\"></label>"
            + "<button type=\"submit\">Send</button></form>"
    }
}

/// A durable function's record as a timeline: each position a bar from when the code reached
/// it to when it ended (a step's body, a sleep until it woke, a wait until its signal, event
/// or timeout, a call until its jobs finished; one still waiting, until now), all on one
/// axis from the first start to the last end. SVG attributes, not inline styles, so the
/// dashboard's content security policy holds.
struct StepTimeline {
    /// The bars' width in pixels.
    static let width = 160.0
    private let spans: [(start: Double, end: Double, kind: FunctionStep.Kind)]
    private let origin: Double
    private let length: Double

    init(_ steps: [FunctionStep], functionEnded: Bool, now: Date) {
        let nowSeconds = now.timeIntervalSince1970
        spans = steps.enumerated().map { index, step in
            let start = step.startedAt.timeIntervalSince1970
            let end: Double
            if let finished = step.finishedAt {
                end = finished.timeIntervalSince1970
            } else if step.kind == .sleep, let wake = step.wakeAt {
                // A sleep ends when it is due; one still ahead is drawn to now.
                end = min(wake.timeIntervalSince1970, nowSeconds)
            } else {
                // Still waiting (to now), or abandoned by a function that ended: its start only.
                end = functionEnded || index < steps.count - 1 ? start : nowSeconds
            }
            return (start, max(start, end), step.kind)
        }
        origin = spans.map(\.start).min() ?? nowSeconds
        length = max((spans.map(\.end).max() ?? origin) - origin, 0)
    }

    /// The column's heading: the axis's length.
    var heading: String { "Timeline (\(HTML.escape(Self.duration(length))))" }

    /// Position `index`'s bar, with its duration in its title.
    func bar(_ index: Int) -> String {
        let span = spans[index]
        let scale = length > 0 ? Self.width / length : 0
        let x = length > 0 ? (span.start - origin) * scale : 0
        // At least a pixel, so that a step of a millisecond beside a sleep of days shows.
        let barWidth = max(1, (span.end - span.start) * scale)
        let title = "\(Self.duration(span.end - span.start)), from +\(Self.duration(span.start - origin))"
        func number(_ value: Double) -> String { String(format: "%.1f", value) }
        let size = Int(Self.width)
        return "<svg class=\"timeline\" viewBox=\"0 0 \(size) 10\" width=\"\(size)\" height=\"10\" "
            + "role=\"img\"><rect class=\"span-\(span.kind.rawValue)\" x=\"\(number(min(x, Self.width - 1)))\" y=\"1\" "
            + "width=\"\(number(min(barWidth, Self.width)))\" height=\"8\"><title>\(HTML.escape(title))</title></rect></svg>"
    }

    /// A duration as people read it: ms below a second, s below two minutes, then min, h, d.
    static func duration(_ seconds: Double) -> String {
        switch seconds {
        case ..<1: return "\(Int((seconds * 1000).rounded())) ms"
        case ..<120: return String(format: "%.1f s", seconds)
        case ..<7200: return "\(Int((seconds / 60).rounded())) min"
        case ..<172_800: return String(format: "%.1f h", seconds / 3600)
        default: return String(format: "%.1f d", seconds / 86_400)
        }
    }
}
