import Foundation
import JobQ
import Logging
import Synchronization
import Testing

@testable import JobQCore
@testable import JobQSQL

/// One bad row, one bad value or one failing queue ends or skips what it concerns, and the
/// rest of the work goes on, on every store.
@Suite("Isolation: the bad one never stalls the rest")
struct IsolationTests {
    /// Makes job `id`'s payload unreadable by the partitioned claim, bypassing every check at
    /// enqueue, as a row written by an older jobq or by hand would be: SQLite's JSON functions
    /// fail on text that is not JSON, PostgreSQL's `#>>` on an escaped NUL.
    static func makeUnreadable(_ queue: JobQueue, _ id: JobID, store: TestStore) async throws {
        try await rawWrite(queue) { db in
            switch store {
            case .sqlite:
                try db.execute(sql: "PRAGMA ignore_check_constraints = ON")
                try db.execute(sql: "UPDATE jobq_jobs SET payload = ? WHERE id = ?", arguments: [#"{"customer":"#, id])
                try db.execute(sql: "PRAGMA ignore_check_constraints = OFF")
            case .postgres:
                try db.execute(
                    sql: "UPDATE jobq_jobs SET payload = ? WHERE id = ?", arguments: [#"{"customer":"a\u0000b"}"#, id])
            }
        }
    }

    static func rawWrite(_ queue: JobQueue, _ body: @escaping @Sendable (any SQLTransaction) throws -> Void)
        async throws
    {
        func write(_ store: some SQLStore) async throws {
            try await store.write(.short, audience: .nobody) { db in try body(db) }
        }
        let store: any SQLStore = try #require(queue.store as? any SQLStore)
        try await write(store)
    }

    /// A queue partitioned by a payload member, holding one job whose payload the claim cannot
    /// read, beside a healthy queue with one job.
    static func poisonedStore(_ store: TestStore) async throws -> (JobQueue, healthy: JobID, poison: JobID) {
        let queue = try await store.open()
        try await queue.setLimits(
            QueueLimits(concurrency: 2, partitionBy: .payload("/customer")), for: "poisonq")
        let poison = try await queue.enqueue(
            try JobRequest(executor: "echo", payloadJSON: #"{"customer":"a"}"#, options: .init(queue: "poisonq")))
        try await makeUnreadable(queue, poison.id, store: store)
        let healthy = try await queue.enqueue(
            try JobRequest(executor: "echo", payloadJSON: #"{"customer":"b"}"#, options: .init(queue: "otherq")))
        return (queue, healthy.id, poison.id)
    }

    /// A claim over several queues that fails on a later one hands over the jobs it already
    /// committed for earlier ones (PostgreSQL commits queue by queue) instead of dropping them:
    /// no job is left running that the caller did not get.
    @Test(arguments: TestStore.all) func aClaimThatFailsOnOneQueueHandsOverWhatItClaimed(store: TestStore)
        async throws
    {
        let (queue, healthy, _) = try await Self.poisonedStore(store)
        do {
            let claimed = try await queue.store.claim(
                queues: ["otherq", "poisonq"], limit: 10, workerID: "w", lease: .seconds(30), startingNow: 10)
            Issue.record("the claim of the poisoned queue did not fail: \(claimed.map(\.id))")
        } catch let failure as QueueClaimFailure {
            #expect(failure.queue == "poisonq", "\(failure)")
            let running = try await queue.jobs(matching: JobQuery(state: .running)).map(\.id)
            #expect(Set(running) == Set(failure.claimed.map(\.id)), "running: \(running), handed over: \(failure)")
            let job = try #require(try await queue.job(healthy))
            #expect(job.state == (failure.claimed.isEmpty ? .ready : .running))
        }
    }

    /// A pool on a healthy queue and one whose claim keeps failing runs the healthy queue's
    /// jobs at once, whichever queue comes first, and backs off the failing one (a few logged
    /// failures, not one per poll).
    @Test(arguments: TestStore.all) func aFailingQueueCostsTheOtherQueuesNothing(store: TestStore) async throws {
        for order in [["poisonq", "otherq"], ["otherq", "poisonq"]] {
            let (queue, healthy, poison) = try await Self.poisonedStore(store)
            let log = LogRecorder()
            let pool = WorkerPool(
                queue: queue, queues: order, executors: BuiltinExecutors.all,
                options: quickOptions(stopWhen: .never), logger: Logger(label: "test") { _ in log })
            let running = Task { try await pool.run() }
            defer { running.cancel() }
            try await eventually(.seconds(30), "the healthy job to succeed (queues \(order))") {
                try await queue.job(healthy)?.state == .succeeded
            }
            #expect(try await queue.job(healthy)?.attempt == 1)
            // A second healthy job, enqueued while the other queue keeps failing, runs as quickly.
            let later = try await queue.enqueue(
                try JobRequest(executor: "echo", payloadJSON: "{}", options: .init(queue: "otherq")))
            try await eventually(.seconds(5), "a later healthy job to succeed") {
                try await queue.job(later.id)?.state == .succeeded
            }
            try await Task.sleep(for: .milliseconds(1500))
            let failures = log.messages.filter { $0.contains("claims from queue 'poisonq' wait") }
            // Backed off from 100 ms doubling: a handful of tries in the ~2 s watched (without
            // the backoff, a try every poll: 311 in 15 s).
            #expect(!failures.isEmpty && failures.count <= 6, "\(failures.count) logged failures: \(failures)")
            let ended = try #require(try await queue.job(poison))
            switch store {
            case .postgres:
                // An escaped NUL: the one bad row is ended, saying why, and its queue goes on.
                #expect(ended.state == .dead && (ended.error ?? "").contains("no store can read back"), "\(ended)")
                let sameQueue = try await queue.enqueue(
                    try JobRequest(
                        executor: "echo", payloadJSON: #"{"customer":"c"}"#, options: .init(queue: "poisonq")))
                try await eventually(.seconds(5), "another customer's job in the same queue to succeed") {
                    try await queue.job(sameQueue.id)?.state == .succeeded
                }
            case .sqlite:
                // Text that is not JSON at all (written by hand): left for the operator.
                #expect(ended.state == .ready)
            }
            running.cancel()
            _ = try await within(.seconds(20), "the pool to stop") { try? await running.value }
        }
    }

    /// An error message with a NUL (a command's stderr, an executor's error) is recorded with
    /// the NUL replaced, the same on every store, and the outcomes after it are recorded too.
    @Test(arguments: TestStore.all) func aNulInAnErrorNeitherFailsNorWedgesCompletions(store: TestStore) async throws {
        let queue = try await store.open()
        let nul = try await queue.enqueue(ThrowsText.self, .init(text: "xNULy"), options: .init(maxAttempts: 1))
        let later = try await queue.enqueue(
            try JobRequest(executor: "fail", payloadJSON: #"{"message":"doomed"}"#, options: .init(maxAttempts: 1)))
        let result = try await queue.enqueue(ReturnsText.self, .init(text: "aNULb"))
        let healthy = try await queue.enqueue(ReturnsText.self, .init(text: "fine"))
        try await work(queue, executors: BuiltinExecutors.all + [ThrowsText(), ReturnsText()], limit: .seconds(20))
        let failed = try #require(try await queue.job(nul.id))
        #expect(failed.state == .dead && failed.error == "x\u{FFFD}y", "\(failed.state) \(failed.error ?? "-")")
        #expect(try await queue.job(later.id)?.state == .dead)
        let refused = try #require(try await queue.job(result.id))
        #expect(refused.state == .dead)
        #expect(
            refused.error?.hasPrefix("the result holds an escaped NUL (\\u0000) at byte") == true,
            "\(refused.error ?? "-")")
        #expect(try await queue.job(healthy.id)?.state == .succeeded)
        let events = try await queue.events(after: 0, filter: EventFilter(jobIDs: [nul.id]), limit: 10)
        #expect(events.last?.kind == .dead)
    }

    /// JSON no store can hold (an escaped NUL, a lone surrogate) is refused where it enters,
    /// with an error that says what and where, and nothing is stored.
    @Test(arguments: TestStore.all) func jsonNoStoreCanHoldIsRefusedAtEnqueue(store: TestStore) async throws {
        let queue = try await store.open()
        for payload in [#"{"customer":"a\u0000b"}"#, #"{"a\u0000":1}"#, #"["\ud800"]"#, #"["\udc00\ud800"]"#] {
            #expect(throws: JobQueueError.self, "\(payload)") {
                _ = try JobRequest(executor: "echo", payloadJSON: payload)
            }
        }
        do {
            _ = try await queue.enqueue(ReturnsText.self, .init(text: "a\u{0}b"))
            Issue.record("an input with a NUL was stored")
        } catch let JobQueueError.invalidInput(message) {
            #expect(message.contains("escaped NUL (\\u0000) at byte 10"), "\(message)")
        }
        // Escapes that are fine: an escaped backslash before "u0000", a surrogate pair.
        _ = try JobRequest(executor: "echo", payloadJSON: #"{"a":"\\u0000","b":"\ud83d\ude00"}"#)
        #expect(try await queue.jobs(matching: JobQuery()).isEmpty)
    }

    /// Claims the three jobs of `queue` and hands their successes to one batcher, on a store
    /// that refuses the second's result for good; returns them once the batch is written, with
    /// the outcomes the batcher reported recorded.
    static func succeedAllRefusingTheSecond(_ queue: JobQueue) async throws -> (
        claimed: [ClaimedJob], recorded: [JobID: AttemptOutcome]
    ) {
        let claimed = try await queue.store.claim(
            queues: ["default"], limit: 3, workerID: "w", lease: .seconds(30), startingNow: 3)
        #expect(claimed.count == 3)
        let refusing = RefusingStore(store: queue.store, poison: #""poison""#)
        var quiet = Logger(label: "test")
        quiet.logLevel = .critical
        let batcher = CompletionBatcher(store: refusing, workerID: "w", logger: quiet)
        let recorded = Mutex<[JobID: AttemptOutcome]>([:])
        batcher.onRecorded { items, result in
            guard case .success = result else { return }
            recorded.withLock { for item in items { $0[item.job.id] = item.outcome } }
        }
        for (index, job) in claimed.enumerated() {
            let result = index == 1 ? #""poison""# : #""ok""#
            batcher.submit(.init(job: job, outcome: .succeeded(resultJSON: result), race: AttemptRace()))
        }
        try await within(.seconds(10), "the batch to be written") { await batcher.waitUntilIdle() }
        return (claimed, recorded.withLock { $0 })
    }

    /// A batch of outcomes the store refuses for good is written one by one: the outcome it
    /// refuses ends dead saying so, and the others are recorded as they were, without waiting.
    @Test(arguments: TestStore.all) func aBatchRefusedForGoodIsWrittenOneByOne(store: TestStore) async throws {
        let queue = try await store.open()
        _ = try await queue.enqueue(
            contentsOf: try (0..<3).map { _ in try JobRequest(executor: "echo", payloadJSON: "{}") })
        let (claimed, recorded) = try await Self.succeedAllRefusingTheSecond(queue)
        #expect(recorded.count == 3)
        for (index, job) in claimed.enumerated() {
            let stored = try #require(try await queue.job(job.id))
            if index == 1 {
                #expect(stored.state == .dead)
                #expect(
                    stored.error?.hasPrefix("jobq could not record this attempt's outcome: the store refused it")
                        == true)
            } else {
                #expect(stored.state == .succeeded)
            }
        }
    }

    /// The same for a workflow group's members, whose successes are written together: the member
    /// the store refuses ends dead, the others succeed, and the group still counts all three
    /// and ends, so its workflow does not stay running.
    @Test(arguments: TestStore.all) func aGroupMemberRefusedForGoodEndsAloneAndTheGroupEnds(store: TestStore)
        async throws
    {
        let queue = try await store.open()
        let steps = try (0..<3).map { _ in
            WorkflowNode.step(WorkflowStep(try JobRequest(executor: "echo", payloadJSON: "{}")))
        }
        let id = try await queue.submit(Workflow(root: WorkflowGroup(.parallel, steps, onFailure: .continue)))
        let (claimed, _) = try await Self.succeedAllRefusingTheSecond(queue)
        var states: [JobState] = []
        for job in claimed { states.append(try #require(try await queue.job(job.id)).state) }
        #expect(states == [.succeeded, .dead, .succeeded])
        let workflow = try #require(try await queue.workflow(id))
        #expect(workflow.root.counts == .init(total: 3, succeeded: 2, failed: 1, cancelled: 0))
        #expect(workflow.state != .running && workflow.root.state != .running, "\(workflow.state)")
    }

    /// Step records queued with a worker's batcher: a batch the store refuses for good is
    /// written record by record, the record it refuses is reported failed (its function's
    /// attempt fails) and the others are written; a record of an attempt the worker no longer
    /// holds is reported lost and written nowhere.
    @Test(arguments: TestStore.all) func stepRecordsRefusedOrLostAreReportedOneByOne(store: TestStore)
        async throws
    {
        let queue = try await store.open()
        _ = try await queue.enqueue(
            contentsOf: try (0..<3).map { _ in try JobRequest(executor: "echo", payloadJSON: "{}") })
        let claimed = try await queue.store.claim(
            queues: ["default"], limit: 3, workerID: "w", lease: .seconds(30), startingNow: 3)
        try #require(claimed.count == 3)
        var quiet = Logger(label: "test")
        quiet.logLevel = .critical
        let batcher = CompletionBatcher(
            store: RefusingStore(store: queue.store, poison: #""poison""#), workerID: "w", logger: quiet)
        // The third job is taken over by another worker: its attempt is no longer "w"'s.
        try await Self.rawWrite(queue) { db in
            try db.execute(sql: "UPDATE jobq_jobs SET worker_id = 'other' WHERE id = ?", arguments: [claimed[2].id])
        }
        let settled = Mutex<[String: String]>([:])
        let results = [#""ok""#, #""poison""#, #""late""#]
        for (job, result) in zip(claimed, results) {
            let step = FunctionStep(
                position: 0, name: "s", kind: .step, resultJSON: result, wakeAt: nil, attempt: job.attempt,
                startedAt: Date(), finishedAt: Date())
            batcher.recordStep(
                .init(record: StepRecord(job: job, step: step)) { outcome in
                    let said =
                        switch outcome {
                        case .written: "written"
                        case .lost: "lost"
                        case .failed(let error): "failed: \(error)"
                        }
                    settled.withLock { $0[result] = said }
                })
        }
        try await within(.seconds(10), "the step records to be written") { await batcher.waitUntilIdle() }
        let said = settled.withLock { $0 }
        #expect(said[#""ok""#] == "written")
        #expect(said[#""late""#] == "lost")
        #expect(said[#""poison""#]?.contains("SQLSTATE 22021") == true, "\(said)")
        var recorded: [String?] = []
        for job in claimed { recorded.append(try await queue.store.functionRecord(of: job.id).steps.first?.resultJSON) }
        #expect(recorded == [#""ok""#, nil, nil])
    }

    /// A duration beyond 100 years is refused where it enters, and one stored anyway (by hand,
    /// by an older jobq) is read as 100 years by every reader and worker, never trapping.
    @Test(arguments: TestStore.all) func hugeDurationsAreRefusedAndNeverTrapAReader(store: TestStore) async throws {
        let queue = try await store.open()
        for (options, what) in [
            (JobOptions(timeout: .seconds(Int64(1e16))), "timeout must be at most 100 years"),
            (
                JobOptions(unique: UniqueKey("k", for: .seconds(Int64(1e16)))),
                "a unique period must be at most 100 years"
            )
        ] {
            await #expect("\(what)") {
                _ = try await queue.enqueue(try JobRequest(executor: "echo", payloadJSON: "{}", options: options))
            } throws: { error in
                guard case JobQueueError.invalidInput(let message) = error else { return false }
                return message.contains(what)
            }
        }
        await #expect(throws: JobQueueError.self) {
            try await queue.setRetention(QueueRetention(succeeded: .seconds(Int64(1e16))), for: "q")
        }
        let job = try await queue.enqueue(try JobRequest(executor: "echo", payloadJSON: "{}"))
        try await Self.rawWrite(queue) { db in
            try db.execute(sql: "UPDATE jobq_jobs SET timeout = 1e16 WHERE id = ?", arguments: [job.id])
        }
        let stored = try #require(try await queue.job(job.id))
        #expect(stored.timeout == .seconds(Int64(DurationParser.maximumSeconds)))
        try await work(queue, limit: .seconds(20))
        #expect(try await queue.job(job.id)?.state == .succeeded)
    }
}

struct ThrowsText: Executor {
    static let name = "test-throws-text"
    struct Input: Codable, Sendable { var text: String }
    func run(_ input: Input, context: JobContext) async throws -> String {
        throw ExecutorFailure(input.text.replacingOccurrences(of: "NUL", with: "\u{0}"))
    }
}

struct ReturnsText: Executor {
    static let name = "test-returns-text"
    struct Input: Codable, Sendable { var text: String }
    func run(_ input: Input, context: JobContext) async throws -> String {
        // A payload cannot carry a NUL: the executor makes one from a marker.
        input.text.replacingOccurrences(of: "NUL", with: "\u{0}")
    }
}

/// A store that refuses for good (PostgreSQL's SQLSTATE 22021, as jobq reports it) every batch
/// of outcomes or step records holding a given result, and passes everything else to `store`.
final class RefusingStore: JobStore, FunctionStore, Sendable {
    let store: any Store
    let poison: String

    init(store: any Store, poison: String) {
        self.store = store
        self.poison = poison
    }

    func recordOutcomes(
        _ outcomes: [(job: ClaimedJob, outcome: AttemptOutcome)], starting: [ClaimedJob], workerID: String
    ) async throws -> (outcomes: Set<JobID>, starts: Set<JobID>) {
        let poisoned = outcomes.contains { item in
            if case .succeeded(let result, _) = item.outcome { return result == poison }
            return false
        }
        if poisoned { throw Self.refusal }
        return try await store.recordOutcomes(outcomes, starting: starting, workerID: workerID)
    }

    static let refusal = JobQueueError.storeUnavailable(
        "PostgreSQL refused a statement: invalid byte sequence (SQLSTATE 22021) in: UPDATE jobq_jobs")

    func recordSteps(_ records: [StepRecord], workerID: String) async throws -> Set<JobID> {
        if records.contains(where: { $0.step.resultJSON == poison }) { throw Self.refusal }
        return try await store.recordSteps(records, workerID: workerID)
    }

    func functionRecord(of job: JobID) async throws -> FunctionRecord { try await store.functionRecord(of: job) }
    func recordStep(_ step: FunctionStep, job: ClaimedJob, workerID: String) async throws -> StepWrite {
        try await store.recordStep(step, job: job, workerID: workerID)
    }
    func takeSignal(for step: FunctionStep, job: ClaimedJob, workerID: String, now: Double) async throws
        -> SignalTake
    {
        try await store.takeSignal(for: step, job: job, workerID: workerID, now: now)
    }
    func sendSignal(to job: JobID, name: String, payloadJSON: String?) async throws -> SignalReceipt {
        try await store.sendSignal(to: job, name: name, payloadJSON: payloadJSON)
    }
    func cancelPoint(_ step: FunctionStep, job: ClaimedJob, workerID: String) async throws -> Bool {
        try await store.cancelPoint(step, job: job, workerID: workerID)
    }
    func startCall(_ children: [JobRequest], step: FunctionStep, job: ClaimedJob, workerID: String) async throws
        -> CallProgress
    {
        try await store.startCall(children, step: step, job: job, workerID: workerID)
    }
    func resumeCall(_ step: FunctionStep, job: ClaimedJob, workerID: String) async throws -> CallProgress {
        try await store.resumeCall(step, job: job, workerID: workerID)
    }

    func enqueue(_ requests: [JobRequest]) async throws -> [Enqueued] { try await store.enqueue(requests) }
    func job(_ id: JobID) async throws -> Job? { try await store.job(id) }
    func jobs(where filter: JobFilter, page: JobPage) async throws -> [Job] {
        try await store.jobs(where: filter, page: page)
    }
    func countJobs(where filter: JobFilter) async throws -> Int { try await store.countJobs(where: filter) }
    func jobIDs(where filter: JobFilter, page: JobPage) async throws -> [JobID] {
        try await store.jobIDs(where: filter, page: page)
    }
    func perform(_ action: BulkAction, on ids: [JobID], where filter: JobFilter, into report: BulkActionReport)
        async throws -> BulkActionReport
    {
        try await store.perform(action, on: ids, where: filter, into: report)
    }
    func recordBulkAction(_ report: BulkActionReport) async throws { try await store.recordBulkAction(report) }
    func cancel(_ id: JobID) async throws -> Job { try await store.cancel(id) }
    func retry(_ id: JobID) async throws -> Job { try await store.retry(id) }
    func delete(_ id: JobID) async throws { try await store.delete(id) }
    func claim(queues: [String], limit: Int, workerID: String, lease: Duration, startingNow: Int) async throws
        -> [ClaimedJob]
    {
        try await store.claim(queues: queues, limit: limit, workerID: workerID, lease: lease, startingNow: startingNow)
    }
    func claimOutlook(queues: [String]) async throws -> ClaimOutlook { try await store.claimOutlook(queues: queues) }
    func pausedClaims() async throws -> PausedClaims { try await store.pausedClaims() }
    func claimOutlookHere(queues: [String]) -> ClaimOutlook? { store.claimOutlookHere(queues: queues) }
    func hasUnfinishedWork(queues: [String], includingFuture: Bool) async throws -> Bool {
        try await store.hasUnfinishedWork(queues: queues, includingFuture: includingFuture)
    }
    func recordProgress(job: ClaimedJob, workerID: String, fraction: Double?, message: String?, dataJSON: String?)
        async throws
    {
        try await store.recordProgress(
            job: job, workerID: workerID, fraction: fraction, message: message, dataJSON: dataJSON)
    }
    func renewLeases(_ ids: [JobID], workerID: String, lease: Duration) async throws -> Set<JobID> {
        try await store.renewLeases(ids, workerID: workerID, lease: lease)
    }
    func lostJobs(_ ids: [JobID], workerID: String) async throws -> Set<JobID> {
        try await store.lostJobs(ids, workerID: workerID)
    }
    func reclaimExpiredLeases() async throws -> Int { try await store.reclaimExpiredLeases() }
    func expireOverdueJobs(skipping: Set<JobID>) async throws -> ExpirySweep {
        try await store.expireOverdueJobs(skipping: skipping)
    }
    func registerWorker(id: String, queues: [String], concurrency: Int) async throws {
        try await store.registerWorker(id: id, queues: queues, concurrency: concurrency)
    }
    func heartbeatWorker(id: String) async throws { try await store.heartbeatWorker(id: id) }
    func removeWorker(id: String) async throws { try await store.removeWorker(id: id) }
}
