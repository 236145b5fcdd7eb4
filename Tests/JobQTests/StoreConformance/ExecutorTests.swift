import Foundation
import Testing

@testable import JobQCore
@testable import JobQSQL
@testable import JobQSQLite

@Suite("Built-in executors, through a WorkerPool")
struct ExecutorTests {
    @Test(arguments: TestStore.all) func sumStoresItsResult(store: TestStore) async throws {
        let queue = try await store.open()
        let job = try await queue.enqueue(SumExecutor.self, .init(a: 40, b: 2))
        try await work(queue)
        let done = try #require(try await queue.job(job.id))
        #expect(done.state == .succeeded)
        #expect(done.resultJSON == #"{"sum":42}"#)
        #expect(done.attempt == 1)
        #expect(done.finishedAt != nil)
    }

    @Test(arguments: TestStore.all) func sumOfFractionsAndOverflow(store: TestStore) async throws {
        let queue = try await store.open()
        let fraction = try await queue.enqueue(JobRequest(executor: "sum", payloadJSON: #"{"a": 1.5, "b": 2}"#))
        let overflow = try await queue.enqueue(
            JobRequest(executor: "sum", payloadJSON: #"{"a": 9223372036854775807, "b": 1}"#))
        try await work(queue)
        #expect(try await queue.job(fraction.id)?.resultJSON == #"{"sum":3.5}"#)
        let dead = try #require(try await queue.job(overflow.id))
        #expect(dead.state == .dead)
        #expect(dead.attempt == 1, "an overflow cannot be fixed by retrying")
        #expect(dead.error?.contains("overflows") == true)
    }

    @Test(arguments: TestStore.all) func echoReturnsItsPayload(store: TestStore) async throws {
        let queue = try await store.open()
        let job = try await queue.enqueue(
            JobRequest(executor: "echo", payloadJSON: #"{"list": [1, "two", null], "nested": {"ok": true}}"#))
        try await work(queue)
        let done = try #require(try await queue.job(job.id))
        #expect(done.state == .succeeded)
        #expect(try done.result(as: JSONValue.self) == done.payload(as: JSONValue.self))
    }

    @Test(arguments: TestStore.all) func sleepWaitsAndReports(store: TestStore) async throws {
        let queue = try await store.open()
        let job = try await queue.enqueue(SleepExecutor.self, .init(seconds: 0.2))
        let start = ContinuousClock.now
        try await work(queue)
        #expect(ContinuousClock.now - start >= .milliseconds(200))
        #expect(try await queue.job(job.id)?.resultJSON == #"{"slept":0.2}"#)
    }

    @Test(arguments: TestStore.all) func shellRunsWithoutAShellAndCapturesOutput(store: TestStore) async throws {
        let queue = try await store.open()
        // With argv, "$HOME; echo injected" reaches echo as one literal argument.
        let literal = try await queue.enqueue(ShellExecutor.self, .init(argv: ["echo", "$HOME; echo injected"]))
        let script = try await queue.enqueue(
            ShellExecutor.self, .init(script: "echo out; echo err >&2; echo $JOBQ_ATTEMPT"))
        let failing = try await queue.enqueue(
            ShellExecutor.self, .init(script: "echo broken >&2; exit 3"), options: .init(maxAttempts: 1))
        let missing = try await queue.enqueue(ShellExecutor.self, .init(argv: ["no-such-command-jobq"]))
        try await work(queue)

        let literalOutput = try #require(try await queue.job(literal.id)?.result(as: ShellExecutor.Output.self))
        #expect(literalOutput.stdout == "$HOME; echo injected\n")
        let scriptOutput = try #require(try await queue.job(script.id)?.result(as: ShellExecutor.Output.self))
        #expect(scriptOutput.stdout == "out\n1\n")
        #expect(scriptOutput.stderr == "err\n")
        #expect(scriptOutput.exitCode == 0)

        let failed = try #require(try await queue.job(failing.id))
        #expect(failed.state == .dead)
        #expect(failed.error == "command exited with status 3: broken")
        let notFound = try #require(try await queue.job(missing.id))
        #expect(notFound.state == .dead)
        #expect(notFound.attempt == 1)
        #expect(notFound.error?.contains("not found in PATH") == true)
    }

    @Test(arguments: TestStore.all) func shellTakesAWorkingDirectoryAndEnvironment(store: TestStore) async throws {
        let queue = try await store.open()
        let job = try await queue.enqueue(
            ShellExecutor.self, .init(script: "pwd; echo $GREETING", cwd: "/tmp", env: ["GREETING": "hi there"]))
        let missing = try await queue.enqueue(ShellExecutor.self, .init(argv: ["ls"], cwd: "/no/such/dir"))
        try await work(queue)
        #expect(try await queue.job(job.id)?.result(as: ShellExecutor.Output.self)?.stdout == "/tmp\nhi there\n")
        let dead = try #require(try await queue.job(missing.id))
        #expect(dead.state == .dead && dead.attempt == 1)
        #expect(dead.error == "working directory '/no/such/dir' does not exist")
    }

    @Test(arguments: TestStore.all) func shellOutputIsTruncatedAtTheLimit(store: TestStore) async throws {
        let queue = try await store.open()
        let job = try await queue.enqueue(ShellExecutor.self, .init(script: "head -c 100000 /dev/zero | tr '\\0' x"))
        try await work(queue)
        let output = try #require(try await queue.job(job.id)?.result(as: ShellExecutor.Output.self))
        #expect(output.stdout.utf8.count == ShellExecutor.outputLimit)
        #expect(output.stdoutTruncated)
        #expect(!output.stderrTruncated)
    }

    @Test(arguments: TestStore.all) func failAlwaysFailsUntilDead(store: TestStore) async throws {
        let queue = try await store.open()
        let job = try await queue.enqueue(FailExecutor.self, .init(message: "boom"), options: .init(maxAttempts: 3))
        let stats = try await work(queue)
        let dead = try #require(try await queue.job(job.id))
        #expect(dead.state == .dead)
        #expect(dead.attempt == 3)
        #expect(dead.error == "boom")
        #expect(stats.retried == 2)
        #expect(stats.dead == 1)
    }

    @Test(arguments: TestStore.all) func typedExecutorRoundTrip(store: TestStore) async throws {
        let queue = try await store.open()
        let job = try await queue.enqueue(Sum.self, .init(a: 2, b: 3))
        try await work(queue, executors: [Sum()])
        #expect(try await queue.job(job.id)?.result(as: Sum.Output.self) == Sum.Output(sum: 5))
    }
}

/// Two executors under one name: the pool refuses to run rather than pick one silently.
@Suite("Executor registration")
struct ExecutorRegistrationTests {
    struct OtherSum: Executor {
        static let name = "sum"
        func run(_ input: JSONValue, context: JobContext) async throws -> JSONValue { .null }
    }

    @Test(arguments: TestStore.all) func twoExecutorsWithOneNameAreRefused(store: TestStore) async throws {
        let queue = try await store.open()
        let pool = WorkerPool(queue: queue, executors: [SumExecutor(), OtherSum()], options: quickOptions())
        await #expect {
            try await pool.run()
        } throws: { error in
            guard case JobQueueError.invalidInput(let text) = error else { return false }
            return text.contains("named 'sum'") && text.contains("static let name")
        }
    }
}
