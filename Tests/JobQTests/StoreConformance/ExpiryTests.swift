import Foundation
import Testing

@testable import JobQCore
@testable import JobQSQL

/// Deadlines to start (`JobOptions.expiresAt`), on every store: a job past its deadline is
/// never claimed, by any claim path, and a worker's sweep ends it as cancelled with an
/// `expired` event, its dependents following their policies.
@Suite("Expiry per job")
struct ExpiryTests {
    static func echo(
        queue: String = "default", after: [JobID] = [], policy: DependencyPolicy = .cancel, expiresIn: Double? = nil,
        customer: String = "a"
    )
        throws -> JobRequest
    {
        try JobRequest(
            executor: "echo", payloadJSON: #"{"customer":"\#(customer)"}"#,
            options: .init(
                queue: queue, after: after, onDependencyFailure: policy,
                expiresAt: expiresIn.map { Date().addingTimeInterval($0) }))
    }

    /// Moves jobs' deadlines into the past, as if they had waited that long.
    static func overdue(_ queue: JobQueue, _ ids: [JobID]) async throws {
        let past = Date().timeIntervalSince1970 - 1
        try await IsolationTests.rawWrite(queue) { db in
            for id in ids {
                try db.execute(sql: "UPDATE jobq_jobs SET expires_at = ? WHERE id = ?", arguments: [past, id])
            }
        }
    }

    @Test(arguments: TestStore.all)
    func aJobPastItsDeadlineNeverRunsAndItsDependentsFollowTheirPolicies(store: TestStore) async throws {
        let queue = try await store.open()
        let late = try await queue.enqueue(try Self.echo(expiresIn: 3600))
        let cancelled = try await queue.enqueue(try Self.echo(after: [late.id]))
        let runsAnyway = try await queue.enqueue(try Self.echo(after: [late.id], policy: .run))
        let inTime = try await queue.enqueue(try Self.echo(expiresIn: 3600))
        #expect(abs((late.expiresAt?.timeIntervalSinceNow ?? 0) - 3600) < 5)
        try await Self.overdue(queue, [late.id])
        try await work(queue, limit: .seconds(30))

        let ended = try #require(try await queue.job(late.id))
        #expect(ended.state == .cancelled && ended.attempt == 0 && ended.startedAt == nil)
        #expect(ended.error?.hasPrefix("expired:") == true, "\(ended.error ?? "")")
        #expect(try await queue.job(cancelled.id)?.state == .cancelled)
        #expect(try await queue.job(runsAnyway.id)?.state == .succeeded)
        #expect(try await queue.job(inTime.id)?.state == .succeeded)
        let events = try await queue.events(after: 0).filter { $0.jobID == late.id }
        #expect(events.map(\.kind) == [.enqueued, .expired], "\(events.map(\.kind))")
        #expect(events.last?.dataJSON?.contains(#""from":"ready""#) == true)
        await #expect(throws: JobResultError.self) {
            _ = try await queue.resultJSON(of: late.id, timeout: .seconds(5))
        }
    }

    /// The claim of every kind of queue passes over an overdue job: unlimited (PostgreSQL's one
    /// statement, SQLite's read-then-mark), limited, and partitioned. The sweep then ends them,
    /// and ends scheduled and waiting jobs past their deadline too.
    @Test(arguments: TestStore.all)
    func everyClaimPassesOverAnOverdueJobAndTheSweepEndsIt(store: TestStore) async throws {
        let queue = try await store.open()
        try await queue.setLimits(QueueLimits(concurrency: 5), for: "limited")
        try await queue.setLimits(QueueLimits(concurrency: 5, partitionBy: .payload("/customer")), for: "split")
        var overdue: [JobID] = []
        var fresh: [JobID] = []
        for name in ["default", "limited", "split"] {
            overdue.append(try await queue.enqueue(try Self.echo(queue: name, expiresIn: 3600)).id)
            fresh.append(try await queue.enqueue(try Self.echo(queue: name, expiresIn: 3600, customer: "b")).id)
        }
        let scheduled = try await queue.enqueue(
            try JobRequest(
                executor: "echo", payloadJSON: "{}",
                options: .init(
                    queue: "idle", runAt: Date().addingTimeInterval(60), expiresAt: Date().addingTimeInterval(120))))
        let blocker = try await queue.enqueue(try Self.echo(queue: "idle"))
        let waiting = try await queue.enqueue(try Self.echo(queue: "idle", after: [blocker.id], expiresIn: 3600))
        try await Self.overdue(queue, overdue + [scheduled.id, waiting.id])

        let claimed = try await queue.store.claim(
            queues: ["default", "limited", "split"], limit: 10, workerID: "w", lease: .seconds(60), startingNow: 0)
        #expect(Set(claimed.map(\.id)) == Set(fresh), "claimed \(claimed.map(\.id)), fresh \(fresh)")

        #expect(try await queue.store.expireOverdueJobs(skipping: []).ended == 5)
        #expect(try await queue.store.expireOverdueJobs(skipping: []).ended == 0, "nothing is ended twice")
        for id in overdue + [scheduled.id, waiting.id] {
            let job = try #require(try await queue.job(id))
            #expect(job.state == .cancelled && job.finishedAt != nil, "job \(id): \(job.state)")
        }
        let expired = try await queue.events(after: 0).filter { $0.kind == .expired }
        #expect(Set(expired.compactMap(\.jobID)) == Set(overdue + [scheduled.id, waiting.id]))
        #expect(expired.contains { $0.jobID == scheduled.id && ($0.dataJSON ?? "").contains(#""from":"scheduled""#) })
        #expect(expired.contains { $0.jobID == waiting.id && ($0.dataJSON ?? "").contains(#""from":"waiting""#) })
        #expect(try await queue.job(blocker.id)?.state == .ready, "jobs without a deadline are left alone")
        for id in fresh { #expect(try await queue.job(id)?.state == .running) }
    }

    /// A retry of an expired job runs it: the passed deadline goes with the retry (kept, the
    /// job expired again unrun ~60 ms later while `jobq retry` had said it was ready); a
    /// deadline still ahead is kept.
    @Test(arguments: TestStore.all)
    func aRetriedExpiredJobRunsAndAFutureDeadlineIsKept(store: TestStore) async throws {
        let queue = try await store.open()
        let expired = try await queue.enqueue(try Self.echo(expiresIn: 600))
        let later = try await queue.enqueue(try Self.echo(expiresIn: 600))
        try await Self.overdue(queue, [expired.id])
        _ = try await queue.store.expireOverdueJobs(skipping: [])
        #expect(try await queue.job(expired.id)?.state == .cancelled)
        _ = try await queue.cancel(later.id)
        let retried = try await queue.retry(expired.id)
        #expect(retried.state == .ready && retried.expiresAt == nil)
        let kept = try await queue.retry(later.id)
        #expect(kept.expiresAt != nil, "a deadline still ahead stays")
        _ = try await queue.store.expireOverdueJobs(skipping: [])
        try await work(queue, limit: .seconds(30))
        #expect(try await queue.job(expired.id)?.state == .succeeded)
        #expect(try await queue.job(later.id)?.state == .succeeded)
    }

    /// A deadline before the run time is refused, and nothing is stored; one that passed while
    /// the enqueue waited (or was given past) ends the job unrun.
    @Test(arguments: TestStore.all)
    func aDeadlineBeforeTheRunTimeIsRefusedAndAPastOneEndsTheJobUnrun(store: TestStore) async throws {
        let queue = try await store.open()
        await #expect {
            _ = try await queue.enqueue(
                try JobRequest(
                    executor: "echo", payloadJSON: "{}",
                    options: JobOptions(
                        runAt: Date().addingTimeInterval(60), expiresAt: Date().addingTimeInterval(30))))
        } throws: { error in
            guard case JobQueueError.invalidInput(let message) = error else { return false }
            return message.contains("would expire") && message.contains("give a later expiresAt")
        }
        // A schedule's template cannot keep an absolute deadline: each occurrence would inherit it.
        await #expect {
            _ = try await queue.addSchedule(
                Schedule(
                    name: "s",
                    request: try JobRequest(
                        executor: "echo", payloadJSON: "{}",
                        options: JobOptions(expiresAt: Date().addingTimeInterval(60))),
                    timing: .every(.seconds(60))))
        } throws: { error in
            guard case JobQueueError.invalidInput(let message) = error else { return false }
            return message.contains("expiresAt")
        }
        #expect(try await queue.jobs().isEmpty)
        #expect(try await queue.events(after: 0).isEmpty)
        let late = try await queue.enqueue(
            try JobRequest(
                executor: "echo", payloadJSON: "{}", options: JobOptions(expiresAt: Date().addingTimeInterval(-1))))
        try await work(queue, limit: .seconds(30))
        let ended = try #require(try await queue.job(late.id))
        #expect(ended.state == .cancelled && ended.attempt == 0)
    }

    /// One overdue job whose ending the store refuses for good (here a trigger of the app's
    /// that shares the database) costs the other overdue jobs nothing: they end in the same
    /// sweep, it is reported and left as it was, a sweep told to skip it does, and once the
    /// refusal is gone it ends too.
    @Test(arguments: TestStore.all)
    func aJobTheStoreRefusesToExpireHoldsUpNoOther(store: TestStore) async throws {
        let queue = try await store.open()
        var ids: [JobID] = []
        for _ in 0..<3 { ids.append(try await queue.enqueue(try Self.echo(queue: "idle", expiresIn: 3600)).id) }
        let poison = ids[1]
        let dependent = try await queue.enqueue(try Self.echo(queue: "idle", after: [poison]))
        try await Self.overdue(queue, ids)
        let (refuse, allow) = Self.appTrigger(store, refusing: poison)
        try await IsolationTests.rawWrite(queue) { db in for sql in refuse { try db.execute(sql: sql) } }

        let sweep = try await queue.store.expireOverdueJobs(skipping: [])
        #expect(sweep.ended == 2)
        #expect(Array(sweep.refused.keys) == [poison])
        #expect(sweep.refused[poison]?.contains("the app refuses") == true, "\(sweep.refused)")
        for id in [ids[0], ids[2]] { #expect(try await queue.job(id)?.state == .cancelled) }
        #expect(try await queue.job(poison)?.state == .ready, "left as it was")
        #expect(try await queue.job(dependent.id)?.state == .waiting)
        let expired = try await queue.events(after: 0).filter { $0.kind == .expired }.compactMap(\.jobID)
        #expect(Set(expired) == [ids[0], ids[2]], "no event for what was rolled back")

        let skipped = try await queue.store.expireOverdueJobs(skipping: [poison])
        #expect(skipped.ended == 0 && skipped.refused.isEmpty)

        try await IsolationTests.rawWrite(queue) { db in try db.execute(sql: allow) }
        #expect(try await queue.store.expireOverdueJobs(skipping: []).ended == 1)
        #expect(try await queue.job(poison)?.state == .cancelled)
        #expect(try await queue.job(dependent.id)?.state == .cancelled, "its dependent followed in the same sweep")
    }

    /// SQL that makes the app's own trigger refuse any change of one job's state, and SQL that
    /// drops it.
    static func appTrigger(_ store: TestStore, refusing id: JobID) -> (install: [String], drop: String) {
        switch store {
        case .sqlite:
            return (
                [
                    """
                    CREATE TRIGGER app_refuses BEFORE UPDATE OF state ON jobq_jobs WHEN OLD.id = \(id)
                    BEGIN SELECT RAISE(ABORT, 'the app refuses this change'); END
                    """
                ], "DROP TRIGGER app_refuses"
            )
        case .postgres:
            return (
                [
                    """
                    CREATE FUNCTION public.app_refuses() RETURNS trigger LANGUAGE plpgsql
                    AS 'BEGIN RAISE EXCEPTION ''the app refuses this change''; END'
                    """,
                    """
                    CREATE TRIGGER app_refuses BEFORE UPDATE OF state ON jobq_jobs
                    FOR EACH ROW WHEN (OLD.id = \(id)) EXECUTE FUNCTION public.app_refuses()
                    """
                ], "DROP TRIGGER app_refuses ON jobq_jobs"
            )
        }
    }
}
