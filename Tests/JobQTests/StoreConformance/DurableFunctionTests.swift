import Foundation
import Synchronization
import Testing

@testable import JobQCore
@testable import JobQSQL

/// How many times each step body ran, by job and step, across every attempt and run.
private let bodyRuns = Mutex<[String: Int]>([:])

private func ran(_ tag: String, _ step: String) -> Int { bodyRuns.withLock { $0["\(tag)/\(step)"] ?? 0 } }

private func count(_ tag: String, _ step: String) {
    bodyRuns.withLock { $0["\(tag)/\(step)", default: 0] += 1 }
}

struct TransientFailure: Error, CustomStringConvertible {
    var description: String { "a transient failure" }
}

/// A function of three steps that fails after its second on its first attempt: the retry
/// replays the first two and runs the third.
struct ThreeSteps: Executor {
    static let name = "test-three-steps"
    struct Input: Codable, Sendable {
        var base: Int
        /// Tells this test's jobs apart from another store's with the same ids.
        var tag = UUID().uuidString
    }
    struct Output: Codable, Sendable, Equatable { var a: Int, b: Int, c: Int }
    func run(_ input: Input, context: JobContext) async throws -> Output {
        let job = input.tag
        let a = try await context.step("a") {
            count(job, "a")
            return input.base + 1
        }
        let b = try await context.step("b") {
            count(job, "b")
            return a * 10
        }
        if context.attempt == 1 { throw TransientFailure() }
        let c = try await context.step("c") {
            count(job, "c")
            return b + 1
        }
        return Output(a: a, b: b, c: c)
    }
}

/// Sleeps between two steps.
struct Napper: Executor {
    static let name = "test-napper"
    struct Input: Codable, Sendable {
        var seconds: Double
        var tag = UUID().uuidString
    }
    struct Output: Codable, Sendable {}
    func run(_ input: Input, context: JobContext) async throws -> Output {
        let job = input.tag
        _ = try await context.step("before") { count(job, "before") }
        try await context.sleep(for: .milliseconds(Int64(input.seconds * 1000)))
        _ = try await context.step("after") { count(job, "after") }
        return Output()
    }
}

/// Waits for the signal `go` twice, and returns what each brought (nil: timed out).
struct Waiter: Executor {
    static let name = "test-waiter"
    struct Input: Codable, Sendable {
        var timeoutSeconds: Double?
        var waits: Int
    }
    struct Go: Codable, Sendable, Equatable { var n: Int }
    struct Output: Codable, Sendable, Equatable { var got: [Go?] }
    func run(_ input: Input, context: JobContext) async throws -> Output {
        var got: [Go?] = []
        for _ in 0..<input.waits {
            got.append(
                try await context.waitForSignal(
                    "go", as: Go.self, timeout: input.timeoutSeconds.map { .milliseconds(Int64($0 * 1000)) }))
        }
        return Output(got: got)
    }
}

/// Asks for other steps on its second attempt than it recorded on its first: `changed` says how.
struct Changeling: Executor {
    static let name = "test-changeling"
    enum Change: String, Codable, Sendable { case unmarked, patchedAfterRecord, patchedBeforeRecord, duplicate }
    struct Input: Codable, Sendable { var change: Change }
    struct Output: Codable, Sendable, Equatable { var path: String }
    func run(_ input: Input, context: JobContext) async throws -> Output {
        let first = context.attempt == 1
        switch input.change {
        case .unmarked:
            _ = try await context.step(first ? "charge" : "reserve") { 1 }
            if first { throw TransientFailure() }
            return Output(path: "new")
        case .patchedAfterRecord:
            // The first attempt (old code) recorded a, b; the new code gates a step in between.
            _ = try await context.step("a") { 1 }
            if !first, try await context.patched("extra") {
                _ = try await context.step("extra") { 2 }
                return Output(path: "new")
            }
            _ = try await context.step("b") { 3 }
            if first { throw TransientFailure() }
            return Output(path: "old")
        case .patchedBeforeRecord:
            // The first attempt recorded only a; the new code reaches the gate first.
            _ = try await context.step("a") { 1 }
            if first { throw TransientFailure() }
            if try await context.patched("extra") {
                _ = try await context.step("extra") { 2 }
                return Output(path: "new")
            }
            return Output(path: "old")
        case .duplicate:
            _ = try await context.step("same") { 1 }
            _ = try await context.step("same") { 2 }
            return Output(path: "never")
        }
    }
}

/// Calls `sum` once, then on several inputs at once, then a job that dies, and compensates.
struct Caller: Executor {
    static let name = "test-caller"
    struct Input: Codable, Sendable { var tag = UUID().uuidString }
    struct Output: Codable, Sendable, Equatable {
        var one: Int
        var many: [Int]
        var failure: String
    }
    func run(_ input: Input, context: JobContext) async throws -> Output {
        let one = try await context.call(SumExecutor.self, .init(a: 40, b: 2))
        count(input.tag, "after one")
        let many = try await context.call(SumExecutor.self, each: (1...3).map { SumExecutor.Input(a: $0, b: 0) })
        var failure = ""
        do {
            _ = try await context.call(
                ShellExecutor.self, .init(argv: ["false"]), options: JobOptions(maxAttempts: 1))
        } catch let error as FunctionCallFailed {
            failure = error.state
            try await context.step("compensate") { count(input.tag, "compensate") }
        }
        func int(_ value: JSONValue) -> Int { if case .integer(let n) = value { Int(n) } else { -1 } }
        return Output(one: int(one.sum), many: many.map { int($0.sum) }, failure: failure)
    }
}

/// Charges, then sleeps a day; cancelled meanwhile, it refunds.
struct Saga: Executor {
    static let name = "test-saga"
    struct Input: Codable, Sendable { var tag = UUID().uuidString }
    struct Output: Codable, Sendable {}
    func run(_ input: Input, context: JobContext) async throws -> Output {
        try await context.step("charge") { count(input.tag, "charge") }
        do {
            try await context.sleep(for: .seconds(86_400))
        } catch let cancelled as FunctionCancelled {
            try await context.step("refund") { count(input.tag, "refund") }
            throw cancelled
        }
        try await context.step("ship") { count(input.tag, "ship") }
        return Output()
    }
}

/// A step that fails `failures` times before it succeeds, under a step retry policy of 3 tries.
struct Retrier: Executor {
    static let name = "test-retrier"
    struct Input: Codable, Sendable {
        var failures: Int
        var tag = UUID().uuidString
    }
    struct Output: Codable, Sendable, Equatable { var tries: Int }
    func run(_ input: Input, context: JobContext) async throws -> Output {
        let policy = RetryPolicy(maxAttempts: 3, backoff: RetryBackoff(base: .milliseconds(5), jitter: 0))
        let tries = try await context.step("flaky", retry: policy) { () async throws -> Int in
            count(input.tag, "flaky")
            let tried = ran(input.tag, "flaky")
            if tried <= input.failures { throw TransientFailure() }
            return tried
        }
        return Output(tries: tries)
    }
}

private let functions: [any Executor] =
    BuiltinExecutors.all + [ThreeSteps(), Napper(), Waiter(), Changeling(), Caller(), Saga(), Retrier()]

@Suite("Durable functions")
struct DurableFunctionTests {
    @Test(arguments: TestStore.all) func finishedStepsReturnTheirRecordedResultsOnTheNextAttempt(store: TestStore)
        async throws
    {
        let queue = try await store.open()
        let input = ThreeSteps.Input(base: 4)
        let job = try await queue.enqueue(ThreeSteps.self, input)
        try await work(queue, executors: functions)
        let done = try #require(try await queue.job(job.id))
        #expect(done.state == .succeeded, "\(done.error ?? "")")
        #expect(done.attempt == 2)
        #expect(try done.result(as: ThreeSteps.Output.self) == .init(a: 5, b: 50, c: 51))
        #expect(ran(input.tag, "a") == 1 && ran(input.tag, "b") == 1 && ran(input.tag, "c") == 1, "each step ran once")
        let steps = try await queue.functionSteps(of: job.id)
        #expect(steps.map(\.name) == ["a", "b", "c"])
        #expect(steps.map(\.attempt) == [1, 1, 2])
        #expect(steps.map(\.resultJSON) == ["5", "50", "51"])
        let events = try await queue.events(after: 0, filter: EventFilter(jobIDs: [job.id])).filter { $0.kind == .step }
        #expect(events.count == 3, "a step event per recorded step")
    }

    @Test(arguments: TestStore.all) func aSleepGivesItsSlotBackAndResumesWhenDue(store: TestStore) async throws {
        let queue = try await store.open()
        // Long enough that a loaded machine runs the other job below before the sleep ends (a CI
        // run's start once held the test's tasks up for over 10 s).
        let input = Napper.Input(seconds: 25)
        let napper = try await queue.enqueue(Napper.self, input)
        let pool = WorkerPool(
            queue: queue, queues: ["default"], concurrency: 1, executors: functions,
            options: quickOptions(stopWhen: .allJobsFinished))
        let running = Task { try await pool.run() }
        defer { running.cancel() }
        try await eventually(.seconds(30), "the function to park") {
            try await queue.job(napper.id)?.state == .scheduled
        }
        let parked = try #require(try await queue.job(napper.id))
        #expect(parked.attempt == 0, "a sleep does not count as an attempt")
        #expect(parked.runAt >= parked.createdAt.addingTimeInterval(25), "due when the sleep ends")
        // The pool's one slot is free while the function sleeps: another job runs meanwhile,
        // finishing before the sleep ends.
        let other = try await queue.enqueue(JobRequest(executor: "echo", payloadJSON: "{}"))
        try await eventually(.seconds(30), "another job to run in the sleeper's slot") {
            try await queue.job(other.id)?.state == .succeeded
        }
        let otherFinished = try #require(try await queue.job(other.id)?.finishedAt)
        #expect(otherFinished < parked.runAt, "it ran while the function slept")
        try await within(.seconds(60), "the pool to finish") { try await running.value }
        let done = try #require(try await queue.job(napper.id))
        #expect(done.state == .succeeded, "\(done.error ?? "")")
        #expect(done.attempt == 1)
        #expect(ran(input.tag, "before") == 1 && ran(input.tag, "after") == 1)
        #expect(try await queue.functionSteps(of: napper.id).map(\.kind) == [.step, .sleep, .step])
        let kinds = try await queue.events(after: 0, filter: EventFilter(jobIDs: [napper.id])).map(\.kind)
        #expect(kinds.contains(.parked))
    }

    @Test(arguments: TestStore.all) func signalsAreKeptUntilAWaitTakesThemEachOnce(store: TestStore) async throws {
        let queue = try await store.open()
        let job = try await queue.enqueue(Waiter.self, .init(timeoutSeconds: 60, waits: 2))
        // Sent before the function reaches its waits: kept, in order.
        let first = try await queue.signal(job: job.id, name: "go", payload: Waiter.Go(n: 1))
        #expect(!first.wokeJob)
        _ = try await queue.signal(job: job.id, name: "other", payloadJSON: "1")
        let pool = WorkerPool(
            queue: queue, queues: ["default"], concurrency: 2, executors: functions,
            options: quickOptions(stopWhen: .allJobsFinished))
        let running = Task { try await pool.run() }
        defer { running.cancel() }
        // The first wait takes the kept signal; the second parks.
        try await eventually(.seconds(30), "the function to park at its second wait") {
            try await queue.job(job.id)?.state == .scheduled
        }
        let steps = try await queue.functionSteps(of: job.id)
        #expect(steps.count == 2)
        #expect(steps.first?.resultJSON == #"{"n":1}"#)
        #expect(steps.last?.finishedAt == nil, "the second wait waits")
        #expect(try await queue.jobs(where: JobFilter("awaiting:go")).map(\.id) == [job.id])
        #expect(try await queue.count(where: JobFilter("awaiting:other")) == 0)
        let second = try await queue.signal(job: job.id, name: "go", payload: Waiter.Go(n: 2))
        #expect(second.wokeJob, "the signal makes the parked function ready")
        try await within(.seconds(60), "the pool to finish") { try await running.value }
        let done = try #require(try await queue.job(job.id))
        #expect(done.state == .succeeded, "\(done.error ?? "")")
        #expect(try done.result(as: Waiter.Output.self) == .init(got: [.init(n: 1), .init(n: 2)]))
        #expect(try await queue.count(where: JobFilter("awaiting:go")) == 0, "woken, it waits no more")
        // A third signal finds the job finished: refused, nothing kept.
        await #expect(throws: JobQueueError.self) {
            try await queue.signal(job: job.id, name: "go", payload: Waiter.Go(n: 3))
        }
        let kinds = try await queue.events(after: 0, filter: EventFilter(jobIDs: [job.id])).map(\.kind)
        #expect(kinds.filter { $0 == .signal }.count == 3)
    }

    @Test(arguments: TestStore.all) func aWaitThatTimesOutReturnsNil(store: TestStore) async throws {
        let queue = try await store.open()
        let job = try await queue.enqueue(Waiter.self, .init(timeoutSeconds: 0.3, waits: 1))
        try await work(queue, executors: functions)
        let done = try #require(try await queue.job(job.id))
        #expect(done.state == .succeeded, "\(done.error ?? "")")
        #expect(try done.result(as: Waiter.Output.self) == .init(got: [nil]))
        let wait = try #require(try await queue.functionSteps(of: job.id).first)
        #expect(wait.finishedAt != nil && wait.resultJSON == nil, "recorded as timed out")
    }

    @Test(arguments: TestStore.all) func changedCodeFailsClearlyUnlessGated(store: TestStore) async throws {
        let queue = try await store.open()
        // Ten attempts: a mismatch that were retried would use them all; one attempt more than
        // the two it needs is a reclaim on a loaded machine, not a retry.
        let unmarked = try await queue.enqueue(
            Changeling.self, .init(change: .unmarked), options: .init(maxAttempts: 10))
        let after = try await queue.enqueue(Changeling.self, .init(change: .patchedAfterRecord))
        let before = try await queue.enqueue(Changeling.self, .init(change: .patchedBeforeRecord))
        let duplicate = try await queue.enqueue(Changeling.self, .init(change: .duplicate))
        try await work(queue, executors: functions)

        let mismatch = try #require(try await queue.job(unmarked.id))
        #expect(mismatch.state == .dead)
        #expect((2...3).contains(mismatch.attempt), "a changed step is not retried: attempt \(mismatch.attempt)")
        #expect(mismatch.error?.contains("step 'charge'") == true && mismatch.error?.contains("step 'reserve'") == true)
        #expect(mismatch.error?.contains("patched") == true, "the error says how to deploy such a change")

        let old = try #require(try await queue.job(after.id))
        #expect(old.state == .succeeded, "\(old.error ?? "")")
        #expect(try old.result(as: Changeling.Output.self)?.path == "old", "a run recorded by the old code keeps it")
        let new = try #require(try await queue.job(before.id))
        #expect(new.state == .succeeded, "\(new.error ?? "")")
        #expect(try new.result(as: Changeling.Output.self)?.path == "new", "a run reaching the gate first takes it")

        let twice = try #require(try await queue.job(duplicate.id))
        #expect(twice.state == .dead)
        #expect(twice.error?.contains("step name 'same' is used twice") == true, "\(twice.error ?? "")")
    }

    @Test(arguments: TestStore.all) func badSignalsAreRefusedAndWriteNothing(store: TestStore) async throws {
        let queue = try await store.open()
        await #expect(throws: JobQueueError.self) { try await queue.signal(job: 999_999, name: "go") }
        let job = try await queue.enqueue(JobRequest(executor: "echo", payloadJSON: "{}"))
        for payload in ["{", "yes", #""\u0000""#] {
            await #expect(throws: JobQueueError.self, "\(payload)") {
                try await queue.signal(job: job.id, name: "go", payloadJSON: payload)
            }
        }
        for name in ["", "a\u{0}b", String(repeating: "n", count: 201)] {
            await #expect(throws: JobQueueError.self) { try await queue.signal(job: job.id, name: name) }
        }
        let events = try await queue.events(after: 0, filter: EventFilter(jobIDs: [job.id]))
        #expect(!events.contains { $0.kind == .signal }, "nothing was sent")
        let rows = try await queue.storedRows("SELECT COUNT(*) AS n FROM jobq_signals")
        #expect(rows.first?["n"] as Int64? == 0)
    }

    @Test(arguments: TestStore.all) func aCallRunsItsJobsOnceAndReturnsTheirResults(store: TestStore) async throws {
        let queue = try await store.open()
        let input = Caller.Input()
        let caller = try await queue.enqueue(Caller.self, input)
        try await work(queue, executors: functions)
        let done = try #require(try await queue.job(caller.id))
        #expect(done.state == .succeeded, "\(done.error ?? "")")
        #expect(try done.result(as: Caller.Output.self) == .init(one: 42, many: [1, 2, 3], failure: "dead"))
        #expect(done.attempt == 1, "waiting for its calls counts no attempt")
        // Code outside steps runs on every run: after the first call, on the three runs that
        // resumed from a call; the step runs once.
        #expect(ran(input.tag, "after one") == 3)
        #expect(ran(input.tag, "compensate") == 1)
        // Five children, each enqueued once, whatever the replays.
        let steps = try await queue.functionSteps(of: caller.id)
        #expect(steps.filter { $0.kind == .call }.map(\.children.count) == [1, 3, 1])
        #expect(try await queue.count(where: JobFilter("executor:sum")) == 4)
        #expect(try await queue.count(where: JobFilter("executor:shell")) == 1)
        let kinds = try await queue.events(after: 0, filter: EventFilter(jobIDs: [caller.id])).map(\.kind)
        #expect(kinds.filter { $0 == .parked }.count == 3, "it parked once per call")
    }

    @Test(arguments: TestStore.all) func cancellingAFunctionWakesItToCompensate(store: TestStore) async throws {
        let queue = try await store.open()
        let input = Saga.Input()
        let saga = try await queue.enqueue(Saga.self, input)
        let pool = WorkerPool(
            queue: queue, queues: ["default"], concurrency: 1, executors: functions,
            options: quickOptions(stopWhen: .allJobsFinished))
        let running = Task { try await pool.run() }
        defer { running.cancel() }
        try await eventually(.seconds(30), "the saga to sleep") { try await queue.job(saga.id)?.state == .scheduled }
        let asked = try await queue.cancel(saga.id)
        #expect(asked.state == .ready, "a parked function is woken to compensate, not ended at once")
        try await within(.seconds(60), "the pool to finish") { try await running.value }
        let done = try #require(try await queue.job(saga.id))
        #expect(done.state == .cancelled)
        #expect(done.error?.contains("cancelled") == true, "\(done.error ?? "")")
        #expect(ran(input.tag, "charge") == 1 && ran(input.tag, "refund") == 1 && ran(input.tag, "ship") == 0)
        let kinds = try await queue.events(after: 0, filter: EventFilter(jobIDs: [saga.id])).map(\.kind)
        #expect(kinds.contains(.cancelling) && kinds.last == .cancelled, "\(kinds)")
        // Cancelled, it is final: another cancel is refused.
        await #expect(throws: JobQueueError.self) { try await queue.cancel(saga.id) }
    }

    @Test(arguments: TestStore.all) func aStepsRetryPolicyTriesItAgainInTheSameRun(store: TestStore) async throws {
        let queue = try await store.open()
        let recovers = try await queue.enqueue(Retrier.self, .init(failures: 2))
        let fails = try await queue.enqueue(Retrier.self, .init(failures: 5))
        try await work(queue, executors: functions)
        let recovered = try #require(try await queue.job(recovers.id))
        #expect(recovered.state == .succeeded, "\(recovered.error ?? "")")
        #expect(recovered.attempt == 1, "the step's tries are within one attempt")
        #expect(try recovered.result(as: Retrier.Output.self) == .init(tries: 3))
        let failed = try #require(try await queue.job(fails.id))
        #expect(failed.state == .dead)
        #expect(failed.attempt == 1, "out of the step's tries, the function fails for good")
        #expect(failed.error?.contains("step 'flaky' failed: failed 3 times") == true, "\(failed.error ?? "")")
    }
}
