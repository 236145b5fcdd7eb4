import Foundation
import Testing

@testable import JobQCore
@testable import JobQDashboard

/// A durable function's job page lists its steps, and a hostile step name or result is shown as
/// text, never as markup.
@Suite("A function's steps on its job page")
struct FunctionStepsPageTests {
    struct Hostile: Executor {
        static let name = "test-hostile-function"
        struct Input: Codable, Sendable {}
        struct Output: Codable, Sendable {}
        func run(_ input: Input, context: JobContext) async throws -> Output {
            _ = try await context.step("<script>alert('name')</script>") { "</code><script>alert('result')</script>" }
            try await context.sleep(for: .seconds(3600))
            return Output()
        }
    }

    struct Approval: Executor {
        static let name = "test-approval"
        struct Input: Codable, Sendable {}
        struct Output: Codable, Sendable, Equatable { var approvedBy: Int? }
        func run(_ input: Input, context: JobContext) async throws -> Output {
            Output(approvedBy: try await context.waitForSignal("approved", as: Int.self, timeout: .seconds(3600)))
        }
    }

    /// A function waiting for a signal gets it from its job page: the form names the signal it
    /// waits for; a payload that is not JSON, a missing name or a missing form token is refused
    /// and sends nothing; a good one wakes the function, which returns the payload.
    @Test func aSignalSentFromTheJobPageWakesTheFunction() async throws {
        let queue = try JobQueue.inMemory()
        let job = try await queue.enqueue(Approval.self, .init())
        try await work(queue, executors: [Approval()], concurrency: 1, options: quickOptions(stopWhen: .queuesEmpty))
        #expect(try await queue.job(job.id)?.state == .scheduled, "parked for its signal")
        let dashboard = try await RunningDashboard(queue: queue, options: .init(storeName: "m", access: .loopbackOnly))
        let page = try await dashboard.get("/jobs/\(job.id)")
        #expect(page.body.contains("action=\"/jobs/\(job.id)/signal\""))
        #expect(page.body.contains("name=\"name\" value=\"approved\""), "the form names the signal it waits for")
        let token = try await dashboard.formToken()

        let notJSON = try await dashboard.post(
            "/jobs/\(job.id)/signal", fields: ["name": "approved", "payload": "yes please"], token: token)
        #expect(notJSON.status == 400 && notJSON.body.contains("is not JSON"), "\(notJSON.status) \(notJSON.body)")
        let noName = try await dashboard.post("/jobs/\(job.id)/signal", fields: ["payload": "1"], token: token)
        #expect(noName.status == 400, "\(noName.status)")
        #expect(noName.body.contains("no &#39;name&#39;") || noName.body.contains("no 'name'"), "\(noName.body)")
        let noToken = try await dashboard.post(
            "/jobs/\(job.id)/signal", fields: ["name": "approved", "payload": "1"], token: nil)
        #expect(noToken.status == 403)
        #expect(try await queue.job(job.id)?.state == .scheduled, "nothing was sent")

        let sent = try await dashboard.post(
            "/jobs/\(job.id)/signal", fields: ["name": "approved", "payload": "42"], token: token)
        #expect(sent.status == 303 && sent.header("Location") == "/jobs/\(job.id)")
        try await work(queue, executors: [Approval()], concurrency: 1, options: quickOptions(stopWhen: .queuesEmpty))
        let done = try #require(try await queue.job(job.id))
        #expect(done.state == .succeeded)
        #expect(try done.result(as: Approval.Output.self) == Approval.Output(approvedBy: 42))
        let finished = try await dashboard.get("/jobs/\(job.id)")
        #expect(!finished.body.contains("/signal\""), "no form once the function ended")
    }

    @Test func stepsAreListedAndHostileTextIsEscaped() async throws {
        let queue = try JobQueue.inMemory()
        let job = try await queue.enqueue(Hostile.self, .init())
        try await work(queue, executors: [Hostile()], concurrency: 1, options: quickOptions(stopWhen: .queuesEmpty))
        let dashboard = try await RunningDashboard(queue: queue, options: .init(storeName: "m", access: .loopbackOnly))
        let page = try await dashboard.get("/jobs/\(job.id)")
        #expect(page.status == 200)
        #expect(page.body.contains("<h2>Steps</h2>"))
        #expect(page.body.contains("sleeping"), "the sleep it is in")
        #expect(!page.body.contains("<script>alert"), "a step's name or result became markup")
        #expect(
            page.body.contains("&lt;script&gt;alert(&#39;name&#39;)&lt;/script&gt;")
                || page.body.contains("&lt;script&gt;alert("))
        #expect(page.body.contains("<svg class=\"timeline\""), "the record as a timeline")
        #expect(page.body.contains("class=\"span-step\"") && page.body.contains("class=\"span-sleep\""))
    }

    /// The timeline puts each position on one axis: a step of milliseconds is a sliver (a
    /// pixel at least) at the start, a sleep that has ended fills the rest, and a wait still
    /// waiting runs to now.
    @Test func theTimelineDrawsEachPositionOnOneAxis() throws {
        let start = Date(timeIntervalSince1970: 1_000_000)
        func at(_ seconds: Double) -> Date { start.addingTimeInterval(seconds) }
        let steps = [
            FunctionStep(
                position: 0, name: "charge", kind: .step, resultJSON: "1", wakeAt: nil, attempt: 1, startedAt: at(0),
                finishedAt: at(0.002)),
            FunctionStep(
                position: 1, name: "sleep", kind: .sleep, resultJSON: nil, wakeAt: at(60), attempt: 1,
                startedAt: at(0.002), finishedAt: nil),
            FunctionStep(
                position: 2, name: "approved", kind: .signal, resultJSON: nil, wakeAt: at(3600), attempt: 2,
                startedAt: at(60), finishedAt: nil)
        ]
        let timeline = StepTimeline(steps, functionEnded: false, now: at(80))
        #expect(timeline.heading == "Timeline (80.0 s)", "\(timeline.heading)")
        func rect(_ index: Int) -> (x: Double, width: Double) {
            let bar = timeline.bar(index).components(separatedBy: "<rect")[1]
            func attribute(_ name: String) -> Double {
                let after = bar.components(separatedBy: " \(name)=\"")[1]
                return Double(after.prefix { $0 != "\"" }) ?? -1
            }
            return (attribute("x"), attribute("width"))
        }
        #expect(rect(0).x == 0 && rect(0).width == 1, "a 2 ms step is a pixel: \(rect(0))")
        #expect(abs(rect(1).width - 120) < 0.2, "the sleep is 60 s of 80: \(rect(1))")
        #expect(abs(rect(2).x - 120) < 0.2 && abs(rect(2).width - 40) < 0.2, "the wait runs to now: \(rect(2))")
        #expect(timeline.bar(0).contains("<title>2 ms, from +0 ms</title>"))
    }
}
