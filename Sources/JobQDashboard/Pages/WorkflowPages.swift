import Foundation
import Hummingbird
import JobQCore
import JobQWebText

extension Dashboard {
    /// Workflows (trees included) newest first, by state.
    func workflowsPage(_ request: Request) async throws -> PageContent {
        var state: WorkflowState?
        if let text = Self.parameter(request, "state") {
            guard let parsed = WorkflowState(rawValue: text) else {
                throw BadRequest(
                    message:
                        "state '\(text)' is not one of: \(WorkflowState.allCases.map(\.rawValue).joined(separator: ", "))"
                )
            }
            state = parsed
        }
        var before: WorkflowID?
        if let text = Self.parameter(request, "before") { before = try Self.workflowID(text) }
        let workflows = try await queue.workflows(state: state, limit: options.pageSize, before: before)
        let rows = workflows.map { workflow in
            let steps = workflow.stepCounts.sorted { $0.key < $1.key }.map { "\(HTML.badge($0.key)) \($0.value)" }
                .joined(separator: " ")
            return Pages.row([
                "<a href=\"/workflows/\(workflow.id)\">#\(workflow.id)</a>",
                workflow.name.map(HTML.escape) ?? "<span class=\"muted\">–</span>",
                HTML.badge(workflow.state.rawValue), steps, HTML.time(workflow.createdAt),
                HTML.time(workflow.finishedAt),
                workflow.error.map { "<span class=\"error\">\(HTML.escape($0))</span>" } ?? ""
            ])
        }
        let filters = (["any"] + WorkflowState.allCases.map(\.rawValue)).map { name in
            let href = name == "any" ? "/workflows" : "/workflows\(HTML.query([("state", name)]))"
            return "<a href=\"\(href)\"\((state?.rawValue ?? "any") == name ? " class=\"current\"" : "")>\(name)</a>"
        }.joined(separator: " ")
        var pager = ""
        if workflows.count == options.pageSize, let last = workflows.last {
            pager =
                "<a href=\"/workflows\(HTML.query([("state", state?.rawValue), ("before", "\(last.id)")]))\" rel=\"next\">Older →</a>"
        }
        let body =
            "<p class=\"filters\">\(filters)</p>"
            + Pages.table(
                ["Workflow", "Name", "State", "Steps", "Created", "Finished", "Error"], rows, empty: "No workflows.")
            + "<p class=\"pager\">\(pager)</p>"
        return PageContent(
            title: "Workflows", section: "/workflows", live: Live(scope: .any, fragmentURL: Self.fragmentURL(request)),
            body: body)
    }

    /// One workflow drawn as its graph (``WorkflowDrawing``), then listed as its nested groups
    /// (sequences numbered, parallel groups side by side), each job with its state, and its trees,
    /// each drawn (``TreeDrawing``) and listed as indented nodes.
    func workflowPage(_ id: WorkflowID, request: Request) async throws -> PageContent {
        guard let status = try await queue.workflow(id) else {
            throw JobQueueError.notFound("no workflow #\(id); it may have been pruned")
        }
        let actions =
            status.state == .running
            ? Pages.action("/workflows/\(id)/cancel", "Cancel workflow", dashboard: self, style: "danger") : ""
        var body =
            "<div class=\"actions\">\(actions)</div><dl class=\"fields\">"
            + "<dt>State</dt><dd>\(HTML.badge(status.state.rawValue))</dd>"
            + "<dt>Name</dt><dd>\(status.name.map(HTML.escape) ?? "<span class=\"muted\">–</span>")</dd>"
            + "<dt>Created</dt><dd>\(HTML.time(status.createdAt))</dd><dt>Finished</dt><dd>\(HTML.time(status.finishedAt))</dd>"
            + (status.error.map { "<dt>Error</dt><dd class=\"error\">\(HTML.escape($0))</dd>" } ?? "")
            + "</dl>"
        body += "<h2>Graph</h2><div class=\"graph\">\(WorkflowDrawing(status).svg)</div>"
        body += "<h2>Steps</h2>" + Self.group(status.root)
        for tree in status.trees {
            let nodes = tree.nodes.map { node in
                let counts = JobState.allCases.compactMap { state in
                    node.jobs[state].map { "\(HTML.badge(state.rawValue)) \($0)" }
                }.joined(separator: " ")
                return
                    "<li class=\"tree-node depth-\(min(node.depth, DashboardAssets.maximumTreeDepthClass))\"><span class=\"node-name\">\(HTML.escape(node.name))</span> <code>\(HTML.escape(node.executor))</code>"
                    + (node.each.map { " each <code>\(HTML.escape($0))</code>" } ?? "")
                    + " \(counts.isEmpty ? "<span class=\"muted\">no jobs yet</span>" : counts)</li>"
            }.joined()
            body +=
                "<h2>Tree (\(tree.jobsCreated) of at most \(tree.maxJobs) jobs)</h2>"
                + "<div class=\"graph\">\(TreeDrawing(tree, jobs: status.jobs).svg)</div><ul class=\"tree\">\(nodes)</ul>"
        }
        if status.contextJSON != "{}" { body += "<h2>Shared context</h2>\(HTML.json(status.contextJSON))" }
        return PageContent(
            title: "Workflow #\(id)", section: "/workflows",
            live: Live(scope: .workflow(id), fragmentURL: Self.fragmentURL(request)), body: body)
    }

    static func group(_ group: WorkflowStatus.Group) -> String {
        let members = group.members.map { member -> String in
            switch member {
            case .job(let job):
                return
                    "<li class=\"member job\">\(Pages.jobLink(job.id)) \(HTML.badge(job.state.rawValue)) <code>\(HTML.escape(job.executor))</code>"
                    + (job.name.map { " \(HTML.escape($0))" } ?? "") + "</li>"
            case .group(let child):
                return "<li class=\"member\">\(Self.group(child))</li>"
            }
        }.joined()
        let list = group.kind == .sequence ? "ol" : "ul"
        let title =
            (group.name.map { "<strong>\(HTML.escape($0))</strong> " } ?? "")
            + "<span class=\"kind\">\(group.kind.rawValue)</span>"
        let counts =
            "\(group.counts.succeeded)/\(group.counts.total) succeeded"
            + (group.counts.failed > 0 ? ", \(group.counts.failed) failed" : "")
        return
            "<div class=\"group \(group.kind.rawValue)\" data-state=\"\(group.state.rawValue)\"><div class=\"group-head\">\(title) \(HTML.badge(group.state.rawValue)) <span class=\"muted\">\(counts)</span></div><\(list) class=\"members\">\(members)</\(list)></div>"
    }
}
