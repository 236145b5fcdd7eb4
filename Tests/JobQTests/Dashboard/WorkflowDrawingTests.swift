import Foundation
import Testing

@testable import JobQCore
@testable import JobQDashboard

/// A workflow's page draws its graph: every step a box linked to its job with its state written
/// in it, a frame per group, an arrow between a sequence's members; a big group folded into one
/// box of counts linked to the workflow's jobs; stored names escaped.
@Suite("Web dashboard: workflows drawn")
struct WorkflowDrawingTests {
    static let hostile = "</text></svg><script>alert(1)</script>"

    @Test(arguments: TestStore.all) func aWorkflowIsDrawnWithEachStepsStateAndLink(store: TestStore) async throws {
        let queue = try await store.open()
        let workflow = try await queue.submit(
            try Workflow(name: "publish") {
                try WorkflowStep(executor: "sum", payloadJSON: #"{"a":1,"b":1}"#, options: .init(name: Self.hostile))
                try WorkflowGroup.parallel(name: "fan", onFailure: .continue) {
                    try WorkflowStep(executor: "sum", payloadJSON: #"{"a":2,"b":2}"#, options: .init(name: "left"))
                    try WorkflowStep(
                        executor: "fail", payloadJSON: #"{"message":"no"}"#,
                        options: .init(maxAttempts: 1, name: "right"))
                }
                try WorkflowStep(executor: "sum", payloadJSON: #"{"a":3,"b":3}"#, options: .init(name: "last"))
            })
        try await work(queue)
        let status = try #require(await queue.workflow(workflow))
        let states = Set(status.jobs.map(\.state))
        #expect(states.contains(.succeeded) && states.contains(.dead), "a run that leaves several states: \(states)")

        let dashboard = try await RunningDashboard(
            queue: queue, options: .init(storeName: "test store", access: .loopbackOnly))
        let page = try await dashboard.get("/workflows/\(workflow)")
        #expect(page.status == 200)
        let svg = try #require(Self.drawing(in: page.body), "the page has a drawing")
        for job in status.jobs {
            #expect(
                svg.contains(
                    #"<a href="/jobs/\#(job.id)" class="wf-step" data-job="\#(job.id)" data-state="\#(job.state.rawValue)">"#
                ),
                "job \(job.id) is a box linked to it, in its state")
            #expect(svg.contains(#"<text class="wf-state state-\#(job.state.rawValue)""#))
        }
        #expect(svg.components(separatedBy: #"class="wf-step""#).count - 1 == 4, "four steps")
        #expect(svg.components(separatedBy: "<g class=\"wf-group ").count - 1 == 2, "the top sequence and the fan")
        #expect(svg.components(separatedBy: #"class="wf-edge""#).count - 1 == 2, "first → fan → last")
        let fan = try #require(
            status.root.members.lazy.compactMap { member -> WorkflowStatus.Group? in
                if case .group(let group) = member { group } else { nil }
            }.first)
        #expect(svg.contains(">fan · parallel · \(fan.state.rawValue) · "), "the group's frame says what it is")
        #expect(!page.body.contains(Self.hostile) && !svg.contains("<script"), "the step's name is escaped")
        #expect(svg.contains("&lt;/text&gt;"))
    }

    @Test func aBigGroupIsFoldedIntoItsCountsLinkedToTheJobs() async throws {
        let queue = try JobQueue.inMemory()
        let steps = WorkflowDrawing.foldAbove + 60
        let workflow = try await queue.submit(
            try Workflow(name: "wide") {
                try WorkflowGroup.parallel(name: "all") {
                    for index in 0..<steps {
                        try WorkflowStep(executor: "sum", payloadJSON: #"{"a":\#(index),"b":1}"#)
                    }
                }
                try WorkflowStep(executor: "sum", payloadJSON: #"{"a":1,"b":1}"#, options: .init(name: "after"))
            })
        let dashboard = try await RunningDashboard(
            queue: queue, options: .init(storeName: "memory", access: .loopbackOnly))
        let page = try await dashboard.get("/workflows/\(workflow)")
        let svg = try #require(Self.drawing(in: page.body), "the page has a drawing")
        #expect(
            svg.contains(#"<a href="/jobs?where=workflow%3A\#(workflow)" class="wf-folded" data-steps="\#(steps)">"#))
        #expect(svg.contains("\(steps) ready"), "the folded box counts its steps by state")
        #expect(svg.components(separatedBy: #"class="wf-step""#).count - 1 == 1, "only the step after it is a box")
    }

    /// The page's inline SVG drawing.
    static func drawing(in page: String) -> String? {
        guard let start = page.range(of: "<svg class=\"workflow-graph\""),
            let end = page.range(of: "</svg>", range: start.upperBound..<page.endIndex)
        else { return nil }
        return String(page[start.lowerBound..<end.upperBound])
    }
}
