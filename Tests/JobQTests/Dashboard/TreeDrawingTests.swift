import Foundation
import Testing

@testable import JobQCore
@testable import JobQDashboard

/// A tree's drawing on its workflow's page: a box per node with its jobs by state, linked to its
/// first job, a line from each parent to its children; a wide node's children folded.
@Suite("Web dashboard: trees drawn")
struct TreeDrawingTests {
    @Test(arguments: TestStore.all) func eachNodeIsABoxWithItsJobsByStateLinkedToItsJob(store: TestStore) async throws {
        let queue = try await store.open()
        let id = try await queue.submit(Cookbook.tree, input: "a-cookbook", name: "cookbook")
        _ = try await work(queue, executors: Cookbook.executors, concurrency: 4)
        let status = try #require(try await queue.workflow(id))
        let tree = try #require(status.trees.first)
        let dashboard = try await RunningDashboard(
            queue: queue, options: .init(storeName: "test", access: .loopbackOnly))
        let page = try await dashboard.get("/workflows/\(id)")
        #expect(page.status == 200)
        let start = try #require(page.body.range(of: "<svg class=\"workflow-graph tree-graph\""))
        let svg = String(page.body[start.lowerBound...]).components(separatedBy: "</svg>")[0]
        #expect(svg.components(separatedBy: "tree-node-box").count - 1 == tree.nodes.count, "a box per node")
        #expect(svg.components(separatedBy: "class=\"wf-edge\"").count - 1 == tree.nodes.count - 1, "a line per child")
        for node in tree.nodes {
            let first = try #require(status.jobs.filter { $0.treeNode == node.id }.map(\.id).min())
            #expect(
                svg.contains("<a href=\"/jobs/\(first)\" class=\"wf-step tree-node-box\" data-node=\"\(node.id)\""),
                "node \(node.name) links to its first job")
            #expect(svg.contains(">\(node.jobCount) succeeded</text>"), "node \(node.name) counts its jobs")
        }
    }

    @Test func aNodeOfManyChildrenDrawsThemFolded() {
        let children = (2...61).map {
            TreeStatus.Node(
                id: Int64($0), parentID: 1, name: "child \($0)", path: "root/child\($0)", executor: "echo",
                onFailure: .failTree, jobs: [.succeeded: 1])
        }
        let root = TreeStatus.Node(
            id: 1, name: "<root>", path: "root", executor: "echo", onFailure: .failTree, jobs: [.running: 1])
        let svg = TreeDrawing(
            TreeStatus(id: 9, group: 1, maxJobs: 100, jobsCreated: 61, nodes: [root] + children), jobs: []
        ).svg
        #expect(svg.contains("data-nodes=\"60\"") && svg.contains(">60 nodes (folded)</text>"))
        #expect(svg.contains(">60 succeeded</text>"))
        #expect(svg.components(separatedBy: "tree-node-box").count - 1 == 1, "only the root is drawn as a node")
        #expect(svg.contains("&lt;root&gt;") && !svg.contains("<root>"), "names escaped")
        #expect(svg.contains("data-state=\"running\""))
    }
}
