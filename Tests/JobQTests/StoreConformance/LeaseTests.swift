import Foundation
import Logging
import ServiceLifecycle
import Synchronization
import Testing

@testable import JobQCore
@testable import JobQSQL
@testable import JobQSQLite

@Suite("Leases, fencing, timeouts, cancellation and shutdown")
struct LeaseTests {
    /// A batch of successes written again after it committed (its answer lost with the
    /// connection, or the rest of its batch failing after it) is neither refused nor recorded
    /// twice: the worker sees its jobs done, and the feed has one `succeeded` event each.
    @Test(arguments: TestStore.all) func aSuccessWrittenAgainIsAcceptedOnce(store: TestStore) async throws {
        let queue = try await store.open()
        let jobs = try await queue.enqueue(
            contentsOf: (0..<3).map { try JobRequest(SumExecutor.self, .init(a: $0, b: 1)) })
        let claimed = try await queue.store.claim(
            queues: ["default"], limit: 3, workerID: "w1", lease: .seconds(60), startingNow: 3)
        #expect(claimed.count == 3)
        let outcomes = claimed.map { ($0, AttemptOutcome.succeeded(resultJSON: #"{"sum":1}"#)) }
        #expect(try await queue.store.recordOutcomes(outcomes, workerID: "w1").isEmpty)
        #expect(try await queue.store.recordOutcomes(outcomes, workerID: "w1").isEmpty, "accepted again, not refused")
        // Another worker's claim to the same attempts is still refused.
        #expect(try await queue.store.recordOutcomes(outcomes, workerID: "w2") == Set(jobs.map(\.id)))
        let succeeded = try await queue.events(after: 0, filter: EventFilter(kinds: [.succeeded]))
        #expect(succeeded.compactMap(\.jobID).sorted() == jobs.map(\.id).sorted(), "one event each")
    }

    @Test(arguments: TestStore.all) func lateWorkerCannotOverwriteTheNextAttempt(store: TestStore) async throws {
        let queue = try await store.open()
        let store = queue.store
        let job = try await queue.enqueue(SumExecutor.self, .init(a: 1, b: 1))

        let first = try #require(
            try await store.claim(queues: ["default"], limit: 10, workerID: "w1", lease: .milliseconds(50)).first)
        #expect(first.id == job.id && first.attempt == 1)
        try await Task.sleep(for: .milliseconds(80))
        #expect(try await store.reclaimExpiredLeases() == 1)
        let reclaimed = try #require(try await queue.job(job.id))
        #expect(reclaimed.state == .failed, "the lost attempt counts as failed; the job is retried at once")
        #expect(reclaimed.error?.contains("lost its lease") == true)

        let second = try #require(
            try await store.claim(queues: ["default"], limit: 10, workerID: "w2", lease: .seconds(30)).first)
        #expect(second.attempt == 2)

        // The first worker finally finishes: refused, whatever it reports.
        let refused = try await store.recordOutcomes(
            [(first, .succeeded(resultJSON: #"{"sum":"stale"}"#))], workerID: "w1")
        #expect(refused == [job.id])
        #expect(try await queue.job(job.id)?.state == .running)
        // Presenting the right worker but the old attempt is refused too.
        #expect(
            try await store.recordOutcomes([(first, .dead(error: "stale", timedOut: false))], workerID: "w2") == [
                job.id
            ])

        #expect(
            try await store.recordOutcomes([(second, .succeeded(resultJSON: #"{"sum":2}"#))], workerID: "w2").isEmpty)
        let done = try #require(try await queue.job(job.id))
        #expect(done.state == .succeeded && done.resultJSON == #"{"sum":2}"# && done.attempt == 2)
    }

    @Test(arguments: TestStore.all) func expiredLeaseOnTheLastAttemptIsDead(store: TestStore) async throws {
        let queue = try await store.open()
        let job = try await queue.enqueue(SumExecutor.self, .init(a: 1, b: 1), options: .init(maxAttempts: 1))
        _ = try await queue.store.claim(queues: ["default"], limit: 1, workerID: "gone", lease: .milliseconds(20))
        try await Task.sleep(for: .milliseconds(50))
        #expect(try await queue.store.reclaimExpiredLeases() == 1)
        let dead = try #require(try await queue.job(job.id))
        #expect(dead.state == .dead)
        #expect(dead.finishedAt != nil)
    }

    @Test(arguments: TestStore.all) func heartbeatKeepsALongJobOwned(store: TestStore) async throws {
        let queue = try await store.open()
        let job = try await queue.enqueue(SleepExecutor.self, .init(seconds: 14))
        var options = quickOptions()
        // Renewed every 2 s (a third of the lease): the job outlives two leases, and a loaded
        // machine's stall of up to 4 s between renewals is survived (a lease of 3 s renewed every
        // second was not, once, on CI: the test process stalled over 2 s under the parallel suite).
        options.lease = .seconds(6)
        let stats = try await work(queue, options: options)
        let done = try #require(try await queue.job(job.id))
        #expect(done.state == .succeeded)
        #expect(done.attempt == 1, "the lease was renewed, so the job never ran twice")
        #expect(stats.refused == 0)
    }

    @Test(arguments: TestStore.all) func timeoutCancelsTheAttemptAndTheRetryPolicyApplies(store: TestStore) async throws
    {
        let queue = try await store.open()
        let job = try await queue.enqueue(
            SleepExecutor.self, .init(seconds: 300), options: .init(maxAttempts: 2, timeout: .milliseconds(100)))
        let start = ContinuousClock.now
        try await work(queue)
        // Two attempts of a 300 s sleep: far less than that means both were cut short.
        #expect(ContinuousClock.now - start < .seconds(120))
        let dead = try #require(try await queue.job(job.id))
        #expect(dead.state == .dead)
        #expect(dead.attempt == 2)
        #expect(dead.error == "timed out after 100ms (attempt 2 of 2)")
    }

    @Test(arguments: TestStore.all) func cancellingARunningJobStopsItAndDiscardsItsResult(store: TestStore) async throws
    {
        let queue = try await store.open()
        let job = try await queue.enqueue(SleepExecutor.self, .init(seconds: 300))
        var options = quickOptions(stopWhen: .queuesEmpty)
        options.lease = .milliseconds(600)
        let pool = WorkerPool(queue: queue, executors: BuiltinExecutors.all, options: options)
        let running = Task { try await pool.run() }
        try await eventually(.seconds(30), "the job to start") { try await queue.job(job.id)?.state == .running }
        let start = ContinuousClock.now
        try await queue.cancel(job.id)
        // Hang detectors with room for the loaded start of a CI run (alone, well under a second).
        try await within(.seconds(120), "the pool to stop the job") { try await running.value }
        #expect(ContinuousClock.now - start < .seconds(120), "stopped before the 300 s sleep ended")
        #expect(try await queue.job(job.id)?.state == .cancelled)
        #expect(pool.statistics.refused == 1)
        #expect(pool.statistics.succeeded == 0)
    }

    @Test(arguments: TestStore.all) func gracefulShutdownReleasesUnfinishedJobsWithoutUsingAnAttempt(store: TestStore)
        async throws
    {
        let queue = try await store.open()
        let long = try await queue.enqueue(SleepExecutor.self, .init(seconds: 30))
        // Long enough to be seen running on a loaded machine, short enough to end in the grace period.
        let short = try await queue.enqueue(SleepExecutor.self, .init(seconds: 2))
        var options = quickOptions(stopWhen: .never)
        // Room for the short job's completion to be written on a loaded machine (a CI run once
        // took over 5 s to write it at the suite's start, and the job was released instead).
        options.shutdownGracePeriod = .seconds(15)
        let pool = WorkerPool(queue: queue, concurrency: 2, executors: BuiltinExecutors.all, options: options)
        let group = ServiceGroup(services: [pool], logger: Logger(label: "test"))
        let running = Task { try await group.run() }
        // Running in the store and in the pool's slots: a claim marks a job that goes to a free
        // slot running before its slot starts it, and a shutdown then releases it unstarted.
        try await eventually(.seconds(30), "both jobs to start") {
            try await queue.jobs(state: .running).count == 2 && pool.statistics.running == 2
        }
        await group.triggerGracefulShutdown()
        // A hang detector with room for a loaded CI run's start (alone, about 2 s).
        try await within(.seconds(60), "shutdown") { try await running.value }

        let finished = try #require(try await queue.job(short.id))
        #expect(finished.state == .succeeded, "a job that ends within the grace period finishes")
        let released = try #require(try await queue.job(long.id))
        #expect(released.state == .ready)
        #expect(released.attempt == 0, "a released job has not used an attempt")
        #expect(pool.statistics.released == 1)
        #expect(try await queue.status().workers.isEmpty, "the worker row is removed on shutdown")
    }

    @Test(arguments: TestStore.all) func prefetchedJobsAreLeasedAndReleasedAtShutdown(store: TestStore) async throws {
        let queue = try await store.open()
        // Sleeps far longer than a loaded machine may take to get here: a running job that
        // ended would let its slot start a buffered one (a parallel run once took 55 s).
        let jobs = try await queue.enqueue(
            contentsOf: (0..<6).map { _ in try JobRequest(SleepExecutor.self, .init(seconds: 600)) })
        var options = quickOptions(stopWhen: .never)
        options.prefetch = 3
        options.shutdownGracePeriod = .milliseconds(100)
        let pool = WorkerPool(queue: queue, concurrency: 2, executors: BuiltinExecutors.all, options: options)
        let group = ServiceGroup(services: [pool], logger: Logger(label: "test"))
        let running = Task { try await group.run() }
        // Before any job finished, the pool claims as many ahead as it has slots.
        // (The claim commits before the pool hands its jobs to slots: wait for both.)
        try await eventually(.seconds(30), "two jobs running and two claimed ahead") {
            try await queue.jobs(state: .running).count == 4 && pool.statistics.running == 2
        }
        try await Task.sleep(for: .milliseconds(200))
        #expect(pool.statistics.running == 2, "only `concurrency` jobs run; the rest wait, leased")
        await group.triggerGracefulShutdown()
        try await within(.seconds(60), "shutdown") { try await running.value }
        let after = try await queue.jobs()
        #expect(
            after.allSatisfy { $0.state == .ready && $0.attempt == 0 }, "\(after.map { ($0.id, $0.state, $0.attempt) })"
        )
        #expect(after.count == jobs.count)
        #expect(pool.statistics.released == 4)
    }

    @Test(arguments: TestStore.all) func cancellingThePoolTaskReleasesItsJobs(store: TestStore) async throws {
        let queue = try await store.open()
        let job = try await queue.enqueue(SleepExecutor.self, .init(seconds: 30))
        let pool = WorkerPool(queue: queue, executors: BuiltinExecutors.all, options: quickOptions(stopWhen: .never))
        let running = Task { try await pool.run() }
        try await eventually(.seconds(30), "the job to start") { try await queue.job(job.id)?.state == .running }
        running.cancel()
        try await within(.seconds(25), "the pool to stop") { try await running.value }
        let released = try #require(try await queue.job(job.id))
        #expect(released.state == .ready)
        #expect(released.attempt == 0)
    }

    /// Cancelled while jobs wait in its buffer, the pool releases them without starting them:
    /// no `started` event, no attempt used.
    @Test(arguments: TestStore.all) func cancellingThePoolTaskReleasesBufferedJobsUnstarted(store: TestStore)
        async throws
    {
        let queue = try await store.open()
        // Sleeps far longer than a loaded machine may take to get here: a running job that
        // ended would let its slot start a buffered one (a parallel run once took 55 s).
        let jobs = try await queue.enqueue(
            contentsOf: (0..<6).map { _ in try JobRequest(SleepExecutor.self, .init(seconds: 600)) })
        var options = quickOptions(stopWhen: .never)
        options.prefetch = 3
        let pool = WorkerPool(queue: queue, concurrency: 2, executors: BuiltinExecutors.all, options: options)
        let running = Task { try await pool.run() }
        // The pool claims ahead as many as it has slots.
        try await eventually(.seconds(30), "two jobs running and two claimed ahead") {
            try await queue.jobs(state: .running).count == 4 && pool.statistics.running == 2
        }
        running.cancel()
        try await within(.seconds(25), "the pool to stop") { try await running.value }
        let after = try await queue.jobs()
        #expect(after.count == jobs.count)
        #expect(
            after.allSatisfy { $0.state == .ready && $0.attempt == 0 }, "\(after.map { ($0.id, $0.state, $0.attempt) })"
        )
        let started = try await queue.events(after: 0, filter: EventFilter(kinds: [.started]))
        #expect(started.count == 2, "only the running jobs had started: \(started.map(\.jobID))")
        #expect(pool.statistics.released == 4)
    }

    @Test(arguments: TestStore.all) func anotherPoolReclaimsAJobWhoseWorkerStoppedRenewing(store: TestStore)
        async throws
    {
        let queue = try await store.open()
        let job = try await queue.enqueue(SumExecutor.self, .init(a: 2, b: 2))
        // A worker that claimed the job and then vanished without a word.
        _ = try await queue.store.claim(queues: ["default"], limit: 1, workerID: "vanished", lease: .milliseconds(200))
        try await work(queue)
        let done = try #require(try await queue.job(job.id))
        #expect(done.state == .succeeded)
        #expect(done.attempt == 2)
    }

    /// One completion transaction records self-contained successes many to a statement (more than one
    /// statement's 64 here), each under the worker's fence, beside outcomes recorded one by one
    /// (a lane member's success, a failure): each job ends as its own outcome says, a start
    /// written with its success has its own time and comes first in its events, and jobs
    /// cancelled meanwhile keep their cancellation, with neither their start nor their success.
    @Test(arguments: TestStore.all) func aCompletionBatchRecordsEachOutcomeUnderTheFence(store: TestStore) async throws
    {
        let queue = try await store.open()
        let plain = try await queue.enqueue(
            contentsOf: (0..<70).map { index in
                try JobRequest(executor: "sum", payloadJSON: #"{"a": \#(index), "b": 1}"#)
            })
        let laneMember = try await queue.enqueue(
            try JobRequest(executor: "sum", payloadJSON: #"{"a":1,"b":2}"#, options: .init(lane: "l")))
        let failing = try await queue.enqueue(SumExecutor.self, .init(a: 1, b: 3))
        let claimed = try await queue.store.claim(
            queues: ["default"], limit: 100, workerID: "w", lease: .seconds(30), startingNow: 0)
        #expect(claimed.count == 72)
        // The first 40 started in an earlier transaction; the rest start in the completion's.
        #expect(
            try await queue.store.recordOutcomes([], starting: Array(claimed.prefix(40)), workerID: "w").starts.isEmpty)
        let startTime = Date().timeIntervalSince1970 - 5
        let lateStarts = claimed.dropFirst(40).map { job in
            var job = job
            job.startTime = startTime
            return job
        }
        let cancelled = Set(plain[50..<53].map(\.id))
        for id in cancelled { _ = try await queue.cancel(id) }

        let outcomes = claimed.map { job -> (job: ClaimedJob, outcome: AttemptOutcome) in
            job.id == failing.id
                ? (job, .retry(error: "no", at: Date().addingTimeInterval(60), timedOut: false))
                : (job, .succeeded(resultJSON: #"{"sum":\#(job.id)}"#))
        }
        let refused = try await queue.store.recordOutcomes(outcomes, starting: lateStarts, workerID: "w")
        #expect(refused.outcomes == cancelled)
        #expect(refused.starts == cancelled)

        var kinds: [JobID: [EventKind]] = [:]
        for event in try await queue.events(after: 0, limit: 1000) {
            if let job = event.jobID { kinds[job, default: []].append(event.kind) }
        }
        let lateIDs = Set(lateStarts.map(\.id))
        for job in try await queue.jobs(limit: 100) {
            if cancelled.contains(job.id) {
                #expect(job.state == .cancelled && job.resultJSON == nil && job.startedAt == nil)
                #expect(kinds[job.id]?.contains(.started) == false && kinds[job.id]?.contains(.succeeded) == false)
            } else if job.id == failing.id {
                #expect(job.state == .failed && job.error == "no")
                #expect(kinds[job.id] == [.enqueued, .started, .failed])
            } else {
                #expect(
                    job.state == .succeeded && job.resultJSON == #"{"sum":\#(job.id)}"# && job.attempt == 1, "\(job)")
                // A lane member's success also says what it did to its lane.
                let expected: [EventKind] =
                    job.id == laneMember.id
                    ? [.enqueued, .started, .succeeded, .lane] : [.enqueued, .started, .succeeded]
                #expect(kinds[job.id] == expected, "job \(job.id)")
                if lateIDs.contains(job.id) {
                    #expect(
                        abs((job.startedAt?.timeIntervalSince1970 ?? 0) - startTime) < 0.001,
                        "job \(job.id) starts when its worker said")
                } else {
                    #expect(job.startedAt != nil)
                }
            }
        }
    }

    /// A worker whose lease expired while it held a job, and that claims the job again (the
    /// same attempt number: an unstarted attempt is not counted), never records the old run's
    /// outcome for the new claim: the old run's start was refused, so its outcome is too, and
    /// every attempt counted has its `started` event (the chaos run's "burned" check).
    @Test(arguments: TestStore.all) func anOutcomeWhoseStartWasRefusedNeverLandsOnANewClaim(store: TestStore)
        async throws
    {
        let queue = try await store.open()
        let job = try await queue.enqueue(
            try JobRequest(executor: "fail", payloadJSON: "{}", options: .init(maxAttempts: 3)))
        let old = try #require(
            try await queue.store.claim(
                queues: ["default"], limit: 1, workerID: "w", lease: .milliseconds(1), startingNow: 0
            ).first)
        try await Task.sleep(for: .milliseconds(20))
        #expect(try await queue.store.reclaimExpiredLeases() == 1, "released: its start was never marked")
        var quiet = Logger(label: "test")
        quiet.logLevel = .critical
        let batcher = CompletionBatcher(store: queue.store, workerID: "w", logger: quiet)
        let refused = Mutex<Set<JobID>>([])
        batcher.onRecorded { items, result in
            if case .success(let ids) = result { refused.withLock { $0.formUnion(ids) } }
        }
        // The old run starts while the job is ready again: its start mark is refused.
        let oldRun = AttemptRace()
        batcher.noteStart(old, race: oldRun)
        try await within(.seconds(10), "the start to be written") { await batcher.waitUntilIdle() }
        // The same worker claims the job again, with the same attempt number.
        let new = try #require(
            try await queue.store.claim(
                queues: ["default"], limit: 1, workerID: "w", lease: .seconds(30), startingNow: 0
            ).first)
        #expect(new.id == job.id && new.attempt == old.attempt)
        // The old run's failure is refused, not recorded for the new claim.
        batcher.submit(.init(job: old, outcome: .dead(error: "doomed", timedOut: false), race: oldRun))
        try await within(.seconds(10), "the old outcome") { await batcher.waitUntilIdle() }
        #expect(refused.withLock { $0 } == [job.id])
        let held = try #require(try await queue.job(job.id))
        #expect(held.state == .running && held.attempt == 1, "\(held.state) attempt \(held.attempt)")
        // The new run's start and outcome are recorded as usual.
        let newRun = AttemptRace()
        batcher.noteStart(new, race: newRun)
        batcher.submit(.init(job: new, outcome: .dead(error: "new run", timedOut: false), race: newRun))
        try await within(.seconds(10), "the new outcome") { await batcher.waitUntilIdle() }
        let done = try #require(try await queue.job(job.id))
        #expect(done.state == .dead && done.error == "new run")
        let events = try await queue.events(after: 0, filter: EventFilter(jobIDs: [job.id]), limit: 20)
        #expect(events.map(\.kind) == [.enqueued, .released, .started, .dead], "\(events.map(\.kind))")
    }
}
