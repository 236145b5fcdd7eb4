import Foundation
import Synchronization
import Testing

@testable import JobQCore
@testable import JobQSQL

/// How many times each committed step's body ran, by tag and step.
private let committedBodyRuns = Mutex<[String: Int]>([:])

/// A function whose steps write the application's rows in its transaction: `invoice` fails in
/// its body on the first attempt (after its insert), the second attempt fails after `invoice`
/// is committed, the third replays `invoice` and commits `ledger`.
private struct Invoicer: Executor {
    static let name = "test-invoicer"
    let app: AppSide
    struct Input: Codable, Sendable { var tag = UUID().uuidString }
    struct Output: Codable, Sendable, Equatable { var invoice: Int64 }

    func run(_ input: Input, context: JobContext) async throws -> Output {
        committedBodyRuns.withLock { $0["\(input.tag)/invoice", default: 0] += 1 }
        let invoice = try await app.committedStep(context, "invoice", note: "invoice", fail: context.attempt == 1)
        if context.attempt == 2 { throw TransientFailure() }
        _ = try await app.committedStep(context, "ledger", note: "ledger")
        return Output(invoice: invoice)
    }
}

/// A function cancelled (by itself, before its first step) while it runs: its attempt is no
/// longer its worker's when its committed step would record.
private struct SelfCancelling: Executor {
    static let name = "test-self-cancelling"
    let app: AppSide
    struct Input: Codable, Sendable {}
    struct Output: Codable, Sendable {}

    func run(_ input: Input, context: JobContext) async throws -> Output {
        try await app.queue.cancel(context.jobID)
        _ = try await app.committedStep(context, "invoice", note: "after the cancel")
        return Output()
    }
}

/// Steps whose record commits in the application's own transaction (`JobContext.step(_:in:_:)`,
/// a GRDB writer on SQLite, a postgres-nio connection on PostgreSQL): the rows they write are
/// there exactly once, whatever fails around them.
@Suite("Committed steps: a step's rows and its record in the application's transaction")
struct CommittedStepTests {
    /// A body that throws leaves no row; a step committed before a failure is replayed, not run
    /// again, so its row stays single; the function ends with one row per step.
    @Test(arguments: TestStore.all)
    func aStepsRowsAreWrittenOnceAcrossFailuresAndReplays(store: TestStore) async throws {
        let app = try await AppSide.open(store)
        defer { Task { await app.close() } }
        let input = Invoicer.Input()
        let job = try await app.queue.enqueue(Invoicer.self, input, options: JobOptions(maxAttempts: 3))
        try await WorkerPool(queue: app.queue, executors: [Invoicer(app: app)], options: quickOptions()).run()

        let finished = try #require(try await app.queue.job(job.id))
        #expect(finished.state == .succeeded && finished.attempt == 3, "\(finished.state) \(finished.attempt)")
        // The first attempt's insert went with its failed body; the third replayed `invoice`.
        #expect(try await app.orders() == ["invoice", "ledger"])
        let steps = try await app.queue.functionSteps(of: job.id)
        #expect(steps.map(\.name) == ["invoice", "ledger"])
        #expect(steps.map(\.attempt) == [2, 3])
        let output = try #require(try finished.result(as: Invoicer.Output.self))
        #expect(output.invoice == Int64(steps[0].resultJSON ?? ""), "the replay returned the recorded id")
        #expect(committedBodyRuns.withLock { $0["\(input.tag)/invoice"] } == 3, "three attempts ran")
        let events = try await app.queue.events(after: 0).filter { $0.jobID == job.id }
        #expect(events.filter { $0.kind == .step }.count == 2)
        let failure = try #require(events.first { $0.kind == .failed })
        #expect("\(failure.dataJSON ?? "")".contains("step 'invoice' failed"), "\(failure.dataJSON ?? "")")
    }

    /// A step of an attempt its worker no longer holds (the job was cancelled while it ran)
    /// commits nothing: the application's row goes with the refused record.
    @Test(arguments: TestStore.all)
    func aStepOfAnAttemptNoLongerHeldWritesNothing(store: TestStore) async throws {
        let app = try await AppSide.open(store)
        defer { Task { await app.close() } }
        let job = try await app.queue.enqueue(SelfCancelling.self, .init())
        try await WorkerPool(queue: app.queue, executors: [SelfCancelling(app: app)], options: quickOptions()).run()
        #expect(try await app.queue.job(job.id)?.state == .cancelled)
        #expect(try await app.orders().isEmpty, "the row of the refused step was rolled back")
        #expect(try await app.queue.functionSteps(of: job.id).isEmpty)
    }
}
