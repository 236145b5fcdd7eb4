import Foundation
import JobQCore
import JobQWebText

/// A workflow drawn as its graph, server-side, as inline SVG: a sequence's members left to
/// right with an arrow from each to the next, a parallel group's stacked, each group in a frame
/// labelled with its name, kind, state and counts, and each step a box linked to its job, with
/// its state written in it (and drawn by class: colour, and a dashed or doubled border for the
/// ends that need a look), so the drawing reads without colour. A group with more than
/// ``foldAbove`` steps of its own is folded into one box of counts by state, linked to the
/// workflow's jobs in the jobs list: a thousand-step fan-out stays one box, not a wall.
///
/// Workflows are nested sequences and parallel groups (their dependency edges are compiled from
/// that nesting), so the layout is the nesting's: each member's size is known from its
/// children's, and nothing is placed twice.
///
/// ```swift
/// let svg = WorkflowDrawing(status).svg   // "<svg class=\"workflow-graph\" ..."
/// ```
struct WorkflowDrawing {
    /// Steps of one group past which the group is drawn folded.
    static let foldAbove = 40

    let status: WorkflowStatus

    init(_ status: WorkflowStatus) { self.status = status }

    var svg: String {
        let size = Self.measure(.group(status.root))
        let width = size.width + 2 * Self.margin
        let height = size.height + 2 * Self.margin
        var out =
            "<svg class=\"workflow-graph\" xmlns=\"http://www.w3.org/2000/svg\" width=\"\(width)\" height=\"\(height)\" "
            + "viewBox=\"0 0 \(width) \(height)\" role=\"img\" "
            + "aria-label=\"Workflow #\(status.id): \(status.jobs.count) steps, \(HTML.escape(status.state.rawValue))\">"
            + "<defs><marker id=\"wf-arrow\" viewBox=\"0 0 8 8\" refX=\"8\" refY=\"4\" markerWidth=\"8\" "
            + "markerHeight=\"8\" orient=\"auto\"><path d=\"M0,0 L8,4 L0,8 z\"/></marker></defs>"
        draw(.group(status.root), x: Self.margin, y: Self.margin, into: &out)
        return out + "</svg>"
    }

    // MARK: Layout (pixels)

    private static let margin = 8
    private static let nodeWidth = 168
    private static let nodeHeight = 44
    private static let gapX = 36
    private static let gapY = 12
    private static let padding = 10
    private static let labelHeight = 22

    private struct Size {
        let width: Int
        let height: Int
    }

    private static func isFolded(_ group: WorkflowStatus.Group) -> Bool {
        group.members.count(where: { if case .job = $0 { true } else { false } }) > foldAbove
    }

    private static func measure(_ member: WorkflowStatus.Member) -> Size {
        guard case .group(let group) = member else { return Size(width: nodeWidth, height: nodeHeight) }
        let inner: Size
        if isFolded(group) || group.members.isEmpty {
            inner = Size(width: nodeWidth, height: nodeHeight)
        } else {
            let sizes = group.members.map(measure)
            inner =
                group.kind == .parallel
                ? Size(
                    width: sizes.map(\.width).max() ?? 0,
                    height: sizes.map(\.height).reduce(0, +) + gapY * (sizes.count - 1))
                : Size(
                    width: sizes.map(\.width).reduce(0, +) + gapX * (sizes.count - 1),
                    height: sizes.map(\.height).max() ?? 0)
        }
        return Size(
            width: max(inner.width + 2 * padding, labelWidth(group)),
            height: inner.height + labelHeight + padding)
    }

    /// A frame is at least as wide as its label's first characters.
    private static func labelWidth(_ group: WorkflowStatus.Group) -> Int {
        min(label(group).count, labelCharacters) * 7 + 2 * padding
    }

    // MARK: Drawing

    private func draw(_ member: WorkflowStatus.Member, x: Int, y: Int, into out: inout String) {
        switch member {
        case .job(let job): drawStep(job, x: x, y: y, into: &out)
        case .group(let group): drawGroup(group, x: x, y: y, into: &out)
        }
    }

    private func drawStep(_ job: Job, x: Int, y: Int, into out: inout String) {
        let state = HTML.escape(job.state.rawValue)
        let title = "#\(job.id) \(job.executor)" + (job.name.map { " (\($0))" } ?? "") + ": \(job.state.rawValue)"
        out +=
            "<a href=\"/jobs/\(job.id)\" class=\"wf-step\" data-job=\"\(job.id)\" data-state=\"\(state)\">"
            + "<title>\(HTML.escape(title))</title>"
            + "<rect class=\"wf-node state-\(state)\" x=\"\(x)\" y=\"\(y)\" width=\"\(Self.nodeWidth)\" "
            + "height=\"\(Self.nodeHeight)\" rx=\"5\"/>"
            + text(x + 8, y + 18, "#\(job.id) " + (job.name ?? job.executor), class: "wf-name")
            + text(x + 8, y + 35, job.state.rawValue, class: "wf-state state-\(state)") + "</a>"
    }

    private func drawGroup(_ group: WorkflowStatus.Group, x: Int, y: Int, into out: inout String) {
        let size = Self.measure(.group(group))
        let state = HTML.escape(group.state.rawValue)
        out +=
            "<g class=\"wf-group \(group.kind.rawValue)\" data-group=\"\(group.id)\" data-state=\"\(state)\">"
            + "<rect class=\"wf-frame state-\(state)\" x=\"\(x)\" y=\"\(y)\" width=\"\(size.width)\" "
            + "height=\"\(size.height)\" rx=\"7\"/>"
            + text(x + Self.padding, y + 15, Self.label(group), class: "wf-label")
        let innerX = x + Self.padding
        let innerY = y + Self.labelHeight
        if Self.isFolded(group) {
            drawFolded(group, x: innerX, y: innerY, into: &out)
        } else if group.members.isEmpty {
            out += text(innerX + 8, innerY + 26, "no steps", class: "wf-state")
        } else if group.kind == .parallel {
            var top = innerY
            for member in group.members {
                draw(member, x: innerX, y: top, into: &out)
                top += Self.measure(member).height + Self.gapY
            }
        } else {
            // A sequence: members centred on one line, an arrow from each to the next.
            let sizes = group.members.map(Self.measure)
            let innerHeight = sizes.map(\.height).max() ?? 0
            let middle = innerY + innerHeight / 2
            var left = innerX
            for (index, member) in group.members.enumerated() {
                if index > 0 {
                    out +=
                        "<line class=\"wf-edge\" x1=\"\(left - Self.gapX + 2)\" y1=\"\(middle)\" x2=\"\(left - 2)\" "
                        + "y2=\"\(middle)\" marker-end=\"url(#wf-arrow)\"/>"
                }
                draw(member, x: left, y: innerY + (innerHeight - sizes[index].height) / 2, into: &out)
                left += sizes[index].width + Self.gapX
            }
        }
        out += "</g>"
    }

    /// A group too big to draw step by step: its steps counted by state, linked to the jobs list.
    private func drawFolded(_ group: WorkflowStatus.Group, x: Int, y: Int, into out: inout String) {
        var counts: [JobState: Int] = [:]
        for case .job(let job) in group.members { counts[job.state, default: 0] += 1 }
        let steps = counts.values.reduce(0, +)
        let summary = JobState.allCases.compactMap { state in counts[state].map { "\($0) \(state.rawValue)" } }
            .joined(separator: ", ")
        let filter = HTML.query([("where", "workflow:\(status.id)")])
        out +=
            "<a href=\"/jobs\(filter)\" class=\"wf-folded\" data-steps=\"\(steps)\">"
            + "<title>\(HTML.escape("\(steps) steps: \(summary)"))</title>"
            + "<rect class=\"wf-node folded\" x=\"\(x)\" y=\"\(y)\" width=\"\(Self.nodeWidth)\" "
            + "height=\"\(Self.nodeHeight)\" rx=\"5\"/>"
            + text(x + 8, y + 18, "\(steps) steps (folded)", class: "wf-name")
            + text(x + 8, y + 35, summary, class: "wf-state") + "</a>"
    }

    private static func label(_ group: WorkflowStatus.Group) -> String {
        (group.name.map { "\($0) · " } ?? "") + "\(group.kind.rawValue) · \(group.state.rawValue) · "
            + "\(group.counts.succeeded)/\(group.counts.total) succeeded"
            + (group.counts.failed > 0 ? ", \(group.counts.failed) failed" : "")
    }

    /// A line of text, cut to what fits its box (a step's whole text is in its title): a
    /// group's label to ``labelCharacters``, anything else to ``nodeCharacters``.
    private func text(_ x: Int, _ y: Int, _ content: String, class name: String) -> String {
        let limit = name == "wf-label" ? Self.labelCharacters : Self.nodeCharacters
        let fitted = content.count > limit ? content.prefix(limit - 1) + "…" : Substring(content)
        return "<text class=\"\(name)\" x=\"\(x)\" y=\"\(y)\">\(HTML.escape(String(fitted)))</text>"
    }

    private static let nodeCharacters = 24
    private static let labelCharacters = 48
}
