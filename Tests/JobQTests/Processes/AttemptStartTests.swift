import Foundation
import Testing

@testable import JobQCore
@testable import JobQSQL
@testable import JobQSQLite

/// An attempt counts when the job starts, not when it is claimed: a job that only sat in a
/// killed worker's buffer keeps its attempts, and a job that kills its worker every time it
/// starts still ends dead after its attempts.
@Suite("Attempts count from the start", .serialized)
struct AttemptStartTests {
    /// In a drain most jobs' start marks and successes share a transaction, and one UPDATE
    /// writes both: every job still has its start time and exactly one `started` event, before
    /// its `succeeded` one.
    @Test func aDrainRecordsEveryStartOnceAndBeforeItsSuccess() async throws {
        let store = try TemporaryStore()
        let queue = try store.open()
        let jobs = try await queue.enqueue(
            contentsOf: (0..<500).map { index in
                try JobRequest(executor: "sum", payloadJSON: #"{"a": \#(index), "b": 1}"#)
            })
        for concurrency in [1, 4] {
            if concurrency == 4 {
                _ = try await queue.enqueue(
                    contentsOf: (0..<500).map { index in
                        try JobRequest(executor: "sum", payloadJSON: #"{"a": \#(index), "b": 2}"#)
                    })
            }
            let pool = WorkerPool(
                queue: queue, concurrency: concurrency, executors: [SumExecutor()], options: quickOptions())
            try await pool.run()
        }
        let all = try await queue.jobs(limit: 2000)
        #expect(all.count == 1000 && jobs.count == 500)
        #expect(all.allSatisfy { $0.state == .succeeded && $0.attempt == 1 })
        #expect(
            all.allSatisfy { job in job.startedAt.map { start in job.finishedAt.map { start <= $0 } ?? false } ?? false
            })
        var kinds: [JobID: [EventKind]] = [:]
        var cursor: Int64 = 0
        while true {
            let page = try await queue.events(after: cursor, limit: 1000)
            guard let last = page.last else { break }
            for event in page { if let job = event.jobID { kinds[job, default: []].append(event.kind) } }
            cursor = last.id
        }
        #expect(kinds.count == 1000)
        #expect(
            kinds.values.allSatisfy { $0 == [.enqueued, .started, .succeeded] },
            "\(kinds.values.first { $0 != [.enqueued, .started, .succeeded] } ?? [])")
    }

    @Test func jobsClaimedAheadIntoAKilledWorkerKeepTheirAttempts() async throws {
        let store = try TemporaryStore()
        let db = store.path
        let queue = try store.open()
        // Four slots run four blocking shell jobs; a pool that knows nothing of run times yet claims as
        // many again ahead, so the four quick jobs wait in its buffer.
        // They run until the test lets them go, so that no load on the machine ends them first.
        let release = store.directory.appendingPathComponent("release").path
        let script = "until [ -e \(release) ]; do sleep 0.05; done"
        let blockers = try await queue.enqueue(
            contentsOf: (0..<4).map { _ in
                try JobRequest(
                    executor: "shell", payloadJSON: #"{"script": "\#(script)"}"#,
                    options: .init(priority: 10, maxAttempts: 2))
            })
        let quick = try await queue.enqueue(
            contentsOf: (0..<4).map { index in
                try JobRequest(
                    executor: "sum", payloadJSON: #"{"a": \#(index), "b": 1}"#, options: .init(maxAttempts: 1))
            })
        let worker = try CLI.startDetached(
            ["work", "--concurrency", "4", "--lease", "3s"], db: db,
            logPath: store.directory.appendingPathComponent("worker.log").path)
        try await EventProcessTests.waitFor("the blockers to start and the rest to be claimed", timeout: 60) {
            let jobs = try await queue.jobs(limit: 100)
            return jobs.filter { $0.startedAt != nil }.count == 4 && jobs.filter { $0.state == .running }.count == 8
        }
        // Claimed, leased, but not started: no attempt has begun, no `started` event.
        let buffered = try await queue.jobs(state: .running, limit: 100).filter { $0.startedAt == nil }
        #expect(Set(buffered.map(\.id)) == Set(quick.map(\.id)))
        #expect(
            Set(try await queue.events(after: 0, filter: EventFilter(kinds: [.started]), limit: 100).map(\.jobID))
                == Set(blockers.map(\.id)))
        kill(worker.processIdentifier, SIGKILL)
        await worker.wait()
        _ = FileManager.default.createFile(atPath: release, contents: nil)

        let rescue = try await CLI.run(["work", "--until-finished", "--lease", "3s", "--backoff", "50ms"], db: db)
        #expect(rescue.status == 0, "\(rescue.stderr)")
        for job in quick {
            let done = try #require(try await queue.job(job.id))
            #expect(
                done.state == .succeeded, "job \(job.id) with one attempt was not burned by the kill: \(done.state)")
            #expect(done.attempt == 1)
        }
        // The blockers did start: their killed attempts count, and each ran once more.
        for blocker in blockers {
            #expect(try await queue.job(blocker.id)?.attempt == 2)
        }
        let released = try await queue.events(after: 0, filter: EventFilter(kinds: [.released]), limit: 100)
        #expect(released.count == 4)
        #expect(released.allSatisfy { $0.dataJSON?.contains("before the attempt started") == true })
    }

    @Test func aJobThatKillsItsWorkerEveryTimeEndsDeadAfterItsAttempts() async throws {
        let store = try TemporaryStore()
        let queue = try store.open()
        let poison = try await queue.enqueue(
            try JobRequest(executor: "crash", payloadJSON: "{}", options: .init(maxAttempts: 3)))
        var crashes = 0
        for run in 0..<8 {
            let worker = try RaceProcessTests.race(store, "crash\(run)", ["crash-worker"])
            let watchdog = Task {
                try await Task.sleep(for: .seconds(60))
                Issue.record(
                    "crash-worker run \(run) did not end within 60s: \(RaceProcessTests.output(store, "crash\(run)"))")
                kill(worker.processIdentifier, SIGKILL)
            }
            await worker.wait()
            watchdog.cancel()
            if worker.terminationReason == .uncaughtSignal {
                crashes += 1
            } else {
                #expect(worker.terminationStatus == 0, "\(RaceProcessTests.output(store, "crash\(run)"))")
                break
            }
        }
        // The first crash may come before its start mark was written: the job then becomes a
        // suspect, whose start is committed before it runs, and each later crash counts an
        // attempt. It ends dead after its 3 attempts, one crash more at most.
        #expect(
            (3...4).contains(crashes),
            "the job ended dead after its attempts and the worker then found nothing to run: \(crashes)")
        let dead = try #require(try await queue.job(poison.id))
        #expect(dead.state == .dead && dead.attempt == 3)
        let error = dead.error ?? ""
        #expect(error.contains("lost its lease"), "\(error)")
    }
}
