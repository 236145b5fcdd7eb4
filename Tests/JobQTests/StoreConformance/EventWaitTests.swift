import Foundation
import Testing

@testable import JobQCore
@testable import JobQSQL

/// Waits for `order.paid` of its order, then records what it was paid.
struct PaymentWaiter: Executor {
    static let name = "test-payment-waiter"
    struct Input: Codable, Sendable {
        var order: Int
        var filter: String?
        var timeoutSeconds: Double = 60
    }
    struct Payment: Codable, Sendable, Equatable {
        var order: Int
        /// A Double: a filter may compare amounts beyond Int64.
        var amount: Double
    }
    struct Output: Codable, Sendable, Equatable { var paid: Payment? }
    func run(_ input: Input, context: JobContext) async throws -> Output {
        let paid = try await context.waitForEvent(
            "order.paid", where: input.filter ?? "/order = \(input.order)", as: Payment.self,
            timeout: .milliseconds(Int64(input.timeoutSeconds * 1000)))
        _ = try await context.step("after") { paid?.amount ?? 0 }
        return Output(paid: paid)
    }
}

private let executors: [any Executor] = BuiltinExecutors.all + [PaymentWaiter()]

@Suite("Durable functions waiting for events")
struct EventWaitTests {
    @Test(arguments: TestStore.all) func aWaitTakesTheFirstMatchingEmitAfterItBegan(store: TestStore) async throws {
        let queue = try await store.open()
        let a = try await queue.enqueue(PaymentWaiter.self, .init(order: 42))
        let b = try await queue.enqueue(PaymentWaiter.self, .init(order: 7))
        // Emitted before any function waits: an event is not kept for a wait to come.
        let early = try await queue.emit("order.paid", payloadJSON: #"{"order": 42, "amount": 1}"#)
        #expect(early.resumedFunctions.isEmpty)
        let pool = WorkerPool(
            queue: queue, queues: ["default"], concurrency: 2, executors: executors,
            options: quickOptions(stopWhen: .allJobsFinished))
        let running = Task { try await pool.run() }
        defer { running.cancel() }
        try await eventually(.seconds(30), "both functions to park") {
            try await queue.count(where: JobFilter("awaiting:order.paid state:scheduled")) == 2
        }
        let other = try await queue.emit("order.paid", payloadJSON: #"{"order": 41, "amount": 5}"#)
        #expect(other.resumedFunctions.isEmpty, "no filter matches order 41")
        let paid = try await queue.emit("order.paid", payloadJSON: #"{"order": 42, "amount": 10}"#)
        #expect(paid.resumedFunctions == [a.id])
        try await eventually(.seconds(30), "the paid function to finish") {
            try await queue.job(a.id)?.state == .succeeded
        }
        #expect(
            try await queue.job(a.id)?.result(as: PaymentWaiter.Output.self)
                == .init(paid: .init(order: 42, amount: 10)))
        #expect(try await queue.jobs(where: JobFilter("awaiting:order.paid")).map(\.id) == [b.id], "b waits on")
        let wait = try #require(try await queue.functionSteps(of: a.id).first)
        #expect(wait.kind == .event && wait.name == "order.paid" && wait.filter == "/order = 42")
        let recorded = try JSONDecoder().decode(PaymentWaiter.Payment.self, from: Data((wait.resultJSON ?? "").utf8))
        #expect(recorded == .init(order: 42, amount: 10), "the payload is the wait's result")
        let again = try await queue.emit("order.paid", payloadJSON: #"{"order": 42, "amount": 99}"#)
        #expect(again.resumedFunctions.isEmpty, "a finished function takes no more")
        #expect(
            try await queue.emit("order.paid", payloadJSON: #"{"order": 7, "amount": 3}"#).resumedFunctions == [b.id])
        try await within(.seconds(60), "the pool to finish") { try await running.value }
        #expect(
            try await queue.job(b.id)?.result(as: PaymentWaiter.Output.self) == .init(paid: .init(order: 7, amount: 3)))
        let kinds = try await queue.events(after: 0, filter: EventFilter(jobIDs: [a.id])).map(\.kind)
        #expect(kinds.filter { $0 == .step }.count == 2, "the emit ended the wait, then the step after: \(kinds)")
        #expect(kinds.contains(.parked))
    }

    @Test(arguments: TestStore.all) func aWaitThatTimesOutReturnsNilAndALateEmitFindsNoOne(store: TestStore)
        async throws
    {
        let queue = try await store.open()
        let job = try await queue.enqueue(PaymentWaiter.self, .init(order: 1, timeoutSeconds: 0.3))
        try await work(queue, executors: executors)
        let done = try #require(try await queue.job(job.id))
        #expect(done.state == .succeeded, "\(done.error ?? "")")
        #expect(try done.result(as: PaymentWaiter.Output.self) == .init(paid: nil))
        let wait = try #require(try await queue.functionSteps(of: job.id).first)
        #expect(wait.finishedAt != nil && wait.resultJSON == nil, "recorded as timed out")
        #expect(try await queue.emit("order.paid", payloadJSON: #"{"order": 1, "amount": 2}"#).resumedFunctions == [])
    }

    /// Numbers compare as numbers, beyond Int64 too, and a filter may test several members.
    @Test(arguments: TestStore.all) func filtersMeanWhatTheyMeanInList(store: TestStore) async throws {
        let queue = try await store.open()
        let big = try await queue.enqueue(
            PaymentWaiter.self, .init(order: 1, filter: "/amount > 18446744073709551615 /currency = \"EUR\""))
        let pool = WorkerPool(
            queue: queue, queues: ["default"], concurrency: 1, executors: executors,
            options: quickOptions(stopWhen: .allJobsFinished))
        let running = Task { try await pool.run() }
        defer { running.cancel() }
        try await eventually(.seconds(30), "the function to park") { try await queue.job(big.id)?.state == .scheduled }
        for payload in [
            #"{"order": 1, "amount": 18446744073709551615, "currency": "EUR"}"#,
            #"{"order": 1, "amount": 18446744073709551616, "currency": "USD"}"#,
            #"{"order": 1, "amount": "18446744073709551616", "currency": "EUR"}"#
        ] {
            #expect(try await queue.emit("order.paid", payloadJSON: payload).resumedFunctions.isEmpty, "\(payload)")
        }
        let taken = try await queue.emit(
            "order.paid", payloadJSON: #"{"order": 1, "amount": 18446744073709551616, "currency": "EUR"}"#)
        #expect(taken.resumedFunctions == [big.id])
        try await within(.seconds(60), "the pool to finish") { try await running.value }
        #expect(try await queue.job(big.id)?.state == .succeeded)
    }

    @Test(arguments: TestStore.all) func aFilterOnAJobsFieldEndsTheFunctionWithWhatToDo(store: TestStore) async throws {
        let queue = try await store.open()
        let bad = try await queue.enqueue(PaymentWaiter.self, .init(order: 1, filter: "state:ready"))
        let unreadable = try await queue.enqueue(PaymentWaiter.self, .init(order: 1, filter: "/order = "))
        try await work(queue, executors: executors)
        let first = try #require(try await queue.job(bad.id))
        #expect(first.state == .dead && first.attempt == 1)
        #expect(first.error?.contains("may test only the event's payload") == true, "\(first.error ?? "")")
        let second = try #require(try await queue.job(unreadable.id))
        #expect(second.state == .dead && second.attempt == 1, "\(second.error ?? "")")
        #expect(try await queue.functionSteps(of: bad.id).isEmpty, "nothing recorded")
    }

    @Test(arguments: TestStore.all) func cancellingAWaitingFunctionEndsItsWait(store: TestStore) async throws {
        let queue = try await store.open()
        let job = try await queue.enqueue(PaymentWaiter.self, .init(order: 5))
        let pool = WorkerPool(
            queue: queue, queues: ["default"], concurrency: 1, executors: executors,
            options: quickOptions(stopWhen: .allJobsFinished))
        let running = Task { try await pool.run() }
        defer { running.cancel() }
        try await eventually(.seconds(30), "the function to park") { try await queue.job(job.id)?.state == .scheduled }
        _ = try await queue.cancel(job.id)
        try await within(.seconds(60), "the pool to finish") { try await running.value }
        #expect(try await queue.job(job.id)?.state == .cancelled)
        #expect(try await queue.functionSteps(of: job.id).first?.cancelled == true)
        #expect(
            try await queue.emit("order.paid", payloadJSON: #"{"order": 5, "amount": 1}"#).resumedFunctions.isEmpty,
            "a cancelled wait takes nothing")
    }
}
