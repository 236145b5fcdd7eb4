import Foundation
import JobQCore
import JobQWebText

/// A job tree drawn top-down as inline SVG, in the workflow drawing's style (``WorkflowDrawing``):
/// each node a box with its name, executor and its jobs by state, drawn by the state that needs a
/// look first (running, then dead, then waiting work, then succeeded), linked to its job (a node
/// of many jobs, `each`, to its first one; its title counts them all), with a line from each
/// parent to its children. A node with more than ``foldAbove`` children draws them folded into one
/// box of counts by state, so a wide tree stays readable.
///
/// ```swift
/// let svg = TreeDrawing(tree, jobs: status.jobs).svg
/// ```
struct TreeDrawing {
    static let foldAbove = 40

    let tree: TreeStatus
    /// The first job of each node, by node id.
    let firstJob: [Int64: JobID]

    init(_ tree: TreeStatus, jobs: [Job]) {
        self.tree = tree
        var first: [Int64: JobID] = [:]
        for job in jobs.sorted(by: { $0.id < $1.id }) {
            if let node = job.treeNode, first[node] == nil { first[node] = job.id }
        }
        firstJob = first
    }

    private static let nodeWidth = 176
    private static let nodeHeight = 54
    private static let gapX = 14
    private static let gapY = 30
    private static let margin = 8

    /// A node placed: its box's left edge (in slots) and depth, with its children's.
    private struct Placed {
        enum Kind {
            case node(TreeStatus.Node)
            case folded(parent: Int64, children: [TreeStatus.Node])
        }
        let kind: Kind
        let slot: Double
        let depth: Int
        let children: [Placed]
    }

    var svg: String {
        let children = Dictionary(grouping: tree.nodes.filter { $0.parentID != nil }, by: { $0.parentID! })
        var nextSlot = 0.0
        var deepest = 0
        // Leaves take the next slot; a parent stands over the middle of its children.
        func place(_ node: TreeStatus.Node, depth: Int) -> Placed {
            deepest = max(deepest, depth)
            let kids = (children[node.id] ?? []).sorted { $0.id < $1.id }
            if kids.isEmpty {
                defer { nextSlot += 1 }
                return Placed(kind: .node(node), slot: nextSlot, depth: depth, children: [])
            }
            let placed: [Placed]
            if kids.count > Self.foldAbove {
                deepest = max(deepest, depth + 1)
                placed = [
                    Placed(
                        kind: .folded(parent: node.id, children: kids), slot: nextSlot, depth: depth + 1, children: [])
                ]
                nextSlot += 1
            } else {
                placed = kids.map { place($0, depth: depth + 1) }
            }
            let middle = (placed.first!.slot + placed.last!.slot) / 2
            return Placed(kind: .node(node), slot: middle, depth: depth, children: placed)
        }
        let roots = tree.nodes.filter { $0.parentID == nil }.sorted { $0.id < $1.id }.map { place($0, depth: 0) }
        let width = Int(max(nextSlot, 1)) * (Self.nodeWidth + Self.gapX) - Self.gapX + 2 * Self.margin
        let height = (deepest + 1) * (Self.nodeHeight + Self.gapY) - Self.gapY + 2 * Self.margin
        var out =
            "<svg class=\"workflow-graph tree-graph\" xmlns=\"http://www.w3.org/2000/svg\" width=\"\(width)\" "
            + "height=\"\(height)\" viewBox=\"0 0 \(width) \(height)\" role=\"img\" "
            + "aria-label=\"Tree #\(tree.id): \(tree.nodes.count) nodes, \(tree.jobsCreated) jobs\">"
        for root in roots { draw(root, into: &out) }
        return out + "</svg>"
    }

    private func origin(_ placed: Placed) -> (x: Int, y: Int) {
        (
            Self.margin + Int(placed.slot * Double(Self.nodeWidth + Self.gapX)),
            Self.margin + placed.depth * (Self.nodeHeight + Self.gapY)
        )
    }

    private func draw(_ placed: Placed, into out: inout String) {
        let (x, y) = origin(placed)
        for child in placed.children {
            let (childX, childY) = origin(child)
            out +=
                "<line class=\"wf-edge\" x1=\"\(x + Self.nodeWidth / 2)\" y1=\"\(y + Self.nodeHeight)\" "
                + "x2=\"\(childX + Self.nodeWidth / 2)\" y2=\"\(childY)\"/>"
            draw(child, into: &out)
        }
        switch placed.kind {
        case .node(let node):
            let state = Self.shownState(node.jobs)
            let summary = Self.summary(node.jobs)
            let title =
                "\(node.name) (\(node.executor))" + (node.each.map { ", each \($0)" } ?? "") + ": "
                + (summary.isEmpty ? "no jobs yet" : summary)
            let box =
                "<title>\(HTML.escape(title))</title>"
                + "<rect class=\"wf-node state-\(state)\" x=\"\(x)\" y=\"\(y)\" width=\"\(Self.nodeWidth)\" height=\"\(Self.nodeHeight)\" rx=\"5\"/>"
                + text(x + 8, y + 17, node.name, class: "wf-name")
                + text(x + 8, y + 32, node.executor + (node.each == nil ? "" : " · each"), class: "wf-label")
                + text(x + 8, y + 47, summary.isEmpty ? "no jobs yet" : summary, class: "wf-state state-\(state)")
            if let job = firstJob[node.id] {
                out +=
                    "<a href=\"/jobs/\(job)\" class=\"wf-step tree-node-box\" data-node=\"\(node.id)\" data-job=\"\(job)\" data-state=\"\(state)\">\(box)</a>"
            } else {
                out += "<g class=\"tree-node-box\" data-node=\"\(node.id)\" data-state=\"\(state)\">\(box)</g>"
            }
        case .folded(_, let children):
            var jobs: [JobState: Int] = [:]
            for child in children { jobs.merge(child.jobs, uniquingKeysWith: +) }
            out +=
                "<g class=\"wf-folded\" data-nodes=\"\(children.count)\"><title>\(children.count) nodes: \(HTML.escape(Self.summary(jobs)))</title>"
                + "<rect class=\"wf-node folded\" x=\"\(x)\" y=\"\(y)\" width=\"\(Self.nodeWidth)\" height=\"\(Self.nodeHeight)\" rx=\"5\"/>"
                + text(x + 8, y + 20, "\(children.count) nodes (folded)", class: "wf-name")
                + text(x + 8, y + 40, Self.summary(jobs), class: "wf-state") + "</g>"
        }
    }

    /// The state a node is drawn by: what needs a look first.
    static func shownState(_ jobs: [JobState: Int]) -> String {
        for state in [JobState.running, .dead, .failed, .ready, .scheduled, .waiting, .cancelled, .succeeded]
        where (jobs[state] ?? 0) > 0 {
            return state.rawValue
        }
        return "waiting"
    }

    /// `2 succeeded · 1 running`, in the order of ``JobState``.
    static func summary(_ jobs: [JobState: Int]) -> String {
        JobState.allCases.compactMap { state in jobs[state].flatMap { $0 > 0 ? "\($0) \(state.rawValue)" : nil } }
            .joined(separator: " · ")
    }

    private func text(_ x: Int, _ y: Int, _ content: String, class name: String) -> String {
        let fitted = content.count > 26 ? content.prefix(25) + "…" : Substring(content)
        return "<text class=\"\(name)\" x=\"\(x)\" y=\"\(y)\">\(HTML.escape(String(fitted)))</text>"
    }
}
