import Foundation
import GRDB
import JobQPostgres
import Logging
import PostgresNIO
import Testing

@testable import JobQCore
@testable import JobQSQL
@testable import JobQSQLite

/// Enqueueing, submitting and emitting in the application's own transaction, on every store:
/// the job commits with the application's row or not at all.
@Suite("Enqueueing in the application's transaction")
struct CallersTransactionTests {
    static func echo(_ note: String) throws -> JobRequest {
        try JobRequest(executor: "echo", payloadJSON: #"{"order":"\#(note)"}"#)
    }

    @Test(arguments: TestStore.all)
    func aRollbackLeavesNoJobAndACommitRunsItOnce(store: TestStore) async throws {
        let app = try await AppSide.open(store)
        defer { Task { await app.close() } }
        let queue = app.queue
        try await app.transaction(note: "rolled back", .enqueue([Self.echo("a")]), rollback: true)
        #expect(try await app.orders().isEmpty)
        #expect(try await queue.jobs().isEmpty)
        #expect(try await queue.events(after: 0).isEmpty, "no event of the rolled-back job")

        let ids = try await app.transaction(note: "kept", .enqueue([Self.echo("b")]))
        #expect(try await app.orders() == ["kept"])
        #expect(try await queue.jobs().map(\.id) == ids)
        try await WorkerPool(queue: queue, executors: BuiltinExecutors.all, options: quickOptions()).run()
        let job = try #require(try await queue.job(ids[0]))
        #expect(job.state == .succeeded && job.attempt == 1)
        #expect(try await queue.events(after: 0).filter { $0.kind == .succeeded }.count == 1)
    }

    /// What jobq refuses midway (a dependency on a job that does not exist) leaves nothing of
    /// the enqueue in the application's transaction, which may still commit its own rows.
    @Test(arguments: TestStore.all)
    func aFailedEnqueueLeavesNothingOfItselfInTheTransaction(store: TestStore) async throws {
        let app = try await AppSide.open(store)
        defer { Task { await app.close() } }
        let orphan = try JobRequest(executor: "echo", payloadJSON: "{}", options: .init(after: [999_999]))
        await #expect {
            try await app.transaction(note: "x", .enqueue([try Self.echo("first"), orphan]))
        } throws: { error in
            "\(error)".contains("999999") && "\(error)".contains("does not exist")
        }
        #expect(try await app.queue.jobs().isEmpty)
        #expect(try await app.queue.events(after: 0).isEmpty)
    }

    /// A workflow, a tree's steps and a trigger's jobs follow the application's transaction too.
    @Test(arguments: TestStore.all)
    func workflowsAndEmitsCommitWithTheApplication(store: TestStore) async throws {
        let app = try await AppSide.open(store)
        defer { Task { await app.close() } }
        let queue = app.queue
        let workflow = try Workflow(name: "receipt") {
            try WorkflowStep(executor: "echo", payloadJSON: #"{"step":"one"}"#)
            try WorkflowStep(executor: "echo", payloadJSON: #"{"step":"two"}"#)
        }
        _ = try await queue.addTrigger(
            Trigger(event: "order.paid", task: "receipt", request: try JobRequest(executor: "echo", payloadJSON: "{}")))
        try await app.transaction(note: "no", .submit(workflow), rollback: true)
        try await app.transaction(note: "no", .emit("order.paid"), rollback: true)
        #expect(try await queue.workflows().isEmpty)
        #expect(try await queue.jobs().isEmpty)

        let submitted = try await app.transaction(note: "wf", .submit(workflow))
        let emitted = try await app.transaction(note: "paid", .emit("order.paid"))
        #expect(emitted.count == 1)
        try await WorkerPool(queue: queue, executors: BuiltinExecutors.all, options: quickOptions()).run()
        #expect(try await queue.workflow(submitted[0])?.state == .succeeded)
        #expect(try await queue.job(emitted[0])?.state == .succeeded)
        #expect(try await app.orders() == ["wf", "paid"])
    }

    /// Four tasks, 250 transactions each, every one an order and its job: as many jobs as orders,
    /// each run once, while a pool drains beside them.
    @Test(arguments: TestStore.all)
    func everyCommittedOrderHasExactlyOneJobRunOnce(store: TestStore) async throws {
        let app = try await AppSide.open(store)
        defer { Task { await app.close() } }
        let queue = app.queue
        let pool = WorkerPool(
            queue: queue, concurrency: 8, executors: BuiltinExecutors.all, options: quickOptions(stopWhen: .never))
        let running = Task { try await pool.run() }
        defer { running.cancel() }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for lane in 0..<4 {
                group.addTask {
                    for index in 0..<250 {
                        // Every seventh transaction rolls back: its order and job both go.
                        try await app.transaction(
                            note: "\(lane)-\(index)", .enqueue([try Self.echo("\(lane)-\(index)")]),
                            rollback: index % 7 == 3, lane: lane)
                    }
                }
            }
            try await group.waitForAll()
        }
        let orders = try await app.orders()
        #expect(orders.count == 4 * (250 - 36))
        try await eventually(.seconds(60), "every job to succeed") {
            try await queue.jobs(state: .succeeded, limit: 2_000).count == orders.count
        }
        let jobs = try await queue.jobs(limit: 2_000)
        #expect(jobs.count == orders.count)
        let notes = try jobs.map { job -> String in
            struct Payload: Decodable { var order: String }
            return try JSONDecoder().decode(Payload.self, from: Data(job.payloadJSON.utf8)).order
        }
        #expect(Set(notes) == Set(orders), "each job is the job of its own order")
        #expect(jobs.allSatisfy { $0.attempt == 1 })
        let succeeded = try await queue.storedRows(
            "SELECT COUNT(*) AS n, COUNT(DISTINCT job_id) AS jobs FROM jobq_events WHERE kind = 'succeeded'")
        #expect(succeeded.first.map { $0["n"] as Int } == orders.count)
        #expect(succeeded.first.map { $0["jobs"] as Int } == orders.count)
    }

    /// Idle workers learn of the job when the application commits, not at their next poll.
    @Test(arguments: TestStore.all)
    func idleWorkersWakeOnTheCommit(store: TestStore) async throws {
        let app = try await AppSide.open(store)
        defer { Task { await app.close() } }
        var options = quickOptions(stopWhen: .never)
        options.pollInterval = .seconds(60)
        let pool = WorkerPool(queue: app.queue, executors: BuiltinExecutors.all, options: options)
        let running = Task { try await pool.run() }
        defer { running.cancel() }
        try await Task.sleep(for: .milliseconds(500))
        let ids = try await app.transaction(note: "wake", .enqueue([Self.echo("wake")]))
        try await eventually(.seconds(10), "the job to run long before the 60 s poll") {
            try await app.queue.job(ids[0])?.state == .succeeded
        }
    }

    /// A connection outside a transaction is refused where jobq writes more than one statement
    /// (each would commit on its own); on PostgreSQL a plain job's single statement commits
    /// whole instead.
    @Test(arguments: TestStore.all)
    func outsideATransactionIsRefused(store: TestStore) async throws {
        let app = try await AppSide.open(store)
        defer { Task { await app.close() } }
        let refused: @Sendable (any Error) -> Bool = { error in
            guard case JobQueueError.invalidState(let text) = error else { return false }
            return text.contains("needs one")
        }
        switch store {
        case .sqlite:
            let pool = try DatabasePool(path: app.location)
            defer { try? pool.close() }
            try await pool.writeWithoutTransaction { db in
                #expect(throws: JobQueueError.self) { try app.queue.enqueue(try Self.echo("x"), in: db) }
                #expect(performing: { try app.queue.enqueue(try Self.echo("x"), in: db) }, throws: refused)
            }
        case .postgres:
            let settings = try PostgresSettings(url: app.location)
            let connection = try await PostgresConnector(settings: settings, logger: PostgresTestServer.logger)
                .connect()
            defer { Task { try? await connection.close() } }
            // What runs in a savepoint is refused (a savepoint needs a transaction block)...
            await #expect(
                performing: { try await app.queue.enqueue(try Self.echo("x"), in: connection, savepoint: true) },
                throws: refused)
            let keyed = try JobRequest(
                executor: "echo", payloadJSON: "{}", options: .init(unique: UniqueKey("k")))
            await #expect(performing: { try await app.queue.enqueue(keyed, in: connection) }, throws: refused)
            #expect(try await app.queue.jobs().isEmpty)
            // ...while a plain job's one statement commits whole on its own, job and event.
            let job = try await app.queue.enqueue(try Self.echo("y"), in: connection)
            #expect(try await app.queue.jobs().map(\.id) == [job.id])
            #expect(try await app.queue.events(after: 0).map(\.kind) == [.enqueued])
            return
        }
        #expect(try await app.queue.jobs().isEmpty)
    }

    /// An application killed (SIGKILL) after the enqueue and before its commit leaves neither
    /// its row nor the job, and the store works on.
    @Test(arguments: TestStore.all)
    func aProducerKilledBeforeItsCommitLeavesNeitherRowNorJob(store: TestStore) async throws {
        let app = try await AppSide.open(store)
        defer { Task { await app.close() } }
        let scratch = TestScratch.url("app-transaction")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        let output = scratch.appendingPathComponent("helper.out")
        let helper = CLI.binary.deletingLastPathComponent().appendingPathComponent("jobq-test-helper")
        let producer = try Child(
            executable: helper, arguments: ["enqueue-in-app-transaction", "--db", app.location], environment: [:],
            stdoutPath: output.path, stderrPath: scratch.appendingPathComponent("helper.err").path)
        try await eventually(.seconds(60), "the producer to enqueue in its open transaction") {
            ((try? String(contentsOf: output, encoding: .utf8)) ?? "").contains("enqueued in the open transaction")
        }
        kill(producer.processIdentifier, SIGKILL)
        await producer.wait()
        #expect(try await app.orders().isEmpty)
        #expect(try await app.queue.jobs().isEmpty)
        let ids = try await app.transaction(note: "after", .enqueue([Self.echo("after")]))
        try await WorkerPool(queue: app.queue, executors: BuiltinExecutors.all, options: quickOptions()).run()
        #expect(try await app.queue.job(ids[0])?.state == .succeeded)
    }
}
