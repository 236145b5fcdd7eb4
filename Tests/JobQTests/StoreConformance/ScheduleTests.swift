import Foundation
import GRDB
import Testing

@testable import JobQCore
@testable import JobQSQL
@testable import JobQSQLite

/// Schedules driven by an injected clock: the scheduler's step is called with simulated times.
@Suite("Schedules")
struct ScheduleTests {
    static let t0 = ISO8601.parse("2026-03-01T12:00:00Z")!

    func request(_ executor: String = "sum") throws -> JobRequest {
        try JobRequest(executor: executor, payloadJSON: #"{"a":1,"b":2}"#, options: .init(queue: "cron", priority: 3))
    }

    /// Ticks every `step` seconds from `from` to `to`, returning all jobs made.
    @discardableResult
    func tick(_ queue: JobQueue, from: Double, to: Double, step: Double) async throws -> [JobID] {
        var made: [JobID] = []
        var t = from
        while t <= to {
            made += try await queue.runDueSchedules(now: Self.t0.addingTimeInterval(t))
            t += step
        }
        return made
    }

    @Test(arguments: TestStore.all) func everyWithTimesMakesExactlyThatManyJobs(store: TestStore) async throws {
        let queue = try await store.open()
        try await queue.addSchedule(
            Schedule(name: "five", request: try request(), timing: .every(.seconds(60), times: 5, start: Self.t0)))
        let made = try await tick(queue, from: -60, to: 600, step: 20)
        #expect(made.count == 5)
        let runs = try await queue.scheduleRuns("five")
        #expect(runs.map { $0.occurrence! } == (0..<5).reversed().map { Self.t0.addingTimeInterval(Double($0) * 60) })
        #expect(
            runs.allSatisfy { $0.queue == "cron" && $0.priority == 3 && $0.executor == "sum" && $0.schedule == "five" })
        let status = try #require(try await queue.schedule("five"))
        #expect(status.made == 5)
        #expect(status.nextRunAt == nil)
        #expect(status.upcoming(5).isEmpty)
    }

    @Test(arguments: TestStore.all) func atRunsOnce(store: TestStore) async throws {
        let queue = try await store.open()
        try await queue.addSchedule(
            Schedule(name: "once", request: try request(), timing: .at(Self.t0.addingTimeInterval(90))))
        #expect(try await tick(queue, from: 0, to: 80, step: 10).isEmpty)
        #expect(try await tick(queue, from: 90, to: 900, step: 10).count == 1)
        #expect(try await queue.schedule("once")?.nextRunAt == nil)
    }

    @Test(arguments: TestStore.all) func skipMakesOneJobAfterAGapAndGoesOnFromTheSchedule(store: TestStore) async throws
    {
        let queue = try await store.open()
        try await queue.addSchedule(
            Schedule(name: "ten", request: try request(), timing: .every(.seconds(600), start: Self.t0)))
        #expect(try await queue.runDueSchedules(now: Self.t0).count == 1)
        // Three hours without a scheduler.
        let late = Self.t0.addingTimeInterval(3 * 3600 + 300)
        let made = try await queue.runDueSchedules(now: late)
        #expect(made.count == 1)
        #expect(try await queue.job(made[0])?.runAt == late, "it runs now")
        #expect(
            try await queue.schedule("ten")?.nextRunAt == Self.t0.addingTimeInterval(3 * 3600 + 600),
            "then on with the schedule")
    }

    @Test(arguments: TestStore.all) func catchUpMakesTheLatestMissedOccurrencesUpToItsLimit(store: TestStore)
        async throws
    {
        let queue = try await store.open()
        try await queue.addSchedule(
            Schedule(
                name: "ten", request: try request(), timing: .every(.seconds(600), start: Self.t0), missed: .catchUp,
                catchUpLimit: 5))
        #expect(try await queue.runDueSchedules(now: Self.t0).count == 1)
        let made = try await queue.runDueSchedules(now: Self.t0.addingTimeInterval(3 * 3600 + 300))
        #expect(made.count == 5)
        let occurrences = try await queue.scheduleRuns("ten", limit: 5).map { $0.occurrence! }
        #expect(occurrences == [180, 170, 160, 150, 140].map { Self.t0.addingTimeInterval(Double($0) * 60) })
    }

    @Test(arguments: TestStore.all) func addingAnExistingNameReplacesIt(store: TestStore) async throws {
        let queue = try await store.open()
        try await queue.addSchedule(
            Schedule(name: "s", request: try request(), timing: .every(.seconds(60), times: 2, start: Self.t0)))
        try await tick(queue, from: 0, to: 60, step: 60)
        let replaced = try await queue.addSchedule(
            Schedule(name: "s", request: try request("echo"), timing: .at(Self.t0.addingTimeInterval(600))))
        #expect(replaced.made == 0)
        #expect(replaced.executor == "echo")
        #expect(replaced.nextRunAt == Self.t0.addingTimeInterval(600))
        #expect(try await tick(queue, from: 120, to: 900, step: 60).count == 1)
        #expect(try await queue.scheduleRuns("s").map(\.executor) == ["echo", "sum", "sum"])
    }

    @Test(arguments: TestStore.all) func cronOccurrencesFollowTheZonesClock(store: TestStore) async throws {
        let queue = try await store.open()
        let zone = try #require(TimeZone(identifier: "America/New_York"))
        _ = try await queue.store.addSchedule(
            Schedule(
                name: "night", request: try request(), timing: .cron(try CronExpression("30 2 * * *"), timeZone: zone)),
            now: ISO8601.parse("2026-03-07T12:00:00Z")!)
        let status = try #require(try await queue.schedule("night"))
        #expect(status.upcoming(2) == ["2026-03-08T07:00:00Z", "2026-03-09T06:30:00Z"].map { ISO8601.parse($0)! })
        #expect(status.timingDescription == #"cron "30 2 * * *" America/New_York"#)
        let made = try await queue.runDueSchedules(now: ISO8601.parse("2026-03-08T07:00:30Z")!)
        #expect(made.count == 1)
        #expect(try await queue.job(made[0])?.occurrence == ISO8601.parse("2026-03-08T07:00:00Z"))
    }

    @Test(arguments: TestStore.all) func aPoolRunsTheSchedulerAndNoticesANewScheduleAtOnce(store: TestStore)
        async throws
    {
        let queue = try await store.open()
        try await queue.addSchedule(
            Schedule(name: "thrice", request: try request(), timing: .every(.milliseconds(200), times: 3)))
        var options = quickOptions(stopWhen: .never)
        options.runsScheduler = true
        let pool = WorkerPool(queue: queue, queues: ["cron"], executors: BuiltinExecutors.all, options: options)
        let running = Task { try await pool.run() }
        try await eventually(.seconds(30), "three runs") {
            try await queue.scheduleRuns("thrice").filter { $0.state == .succeeded }.count == 3
        }
        // Added while the scheduler sleeps (its next occurrence: none): the change wakes it.
        let due = Date().addingTimeInterval(0.3)
        try await queue.addSchedule(Schedule(name: "soon", request: try request(), timing: .at(due)))
        try await eventually(.seconds(10), "the new schedule's run") {
            try await queue.scheduleRuns("soon").first?.state == .succeeded
        }
        let made = try #require(try await queue.scheduleRuns("soon").first)
        #expect(made.createdAt >= due)
        // Unwoken, the scheduler would sleep an hour; a loaded run once took 1.3 s.
        #expect(made.createdAt.timeIntervalSince(due) < 5, "made when due, not at a poll")
        running.cancel()
        // A hang detector: a CI run three times slower than a quiet machine took over 5 s.
        try await within(.seconds(30), "the pool to stop") { try await running.value }
        #expect(try await queue.scheduleRuns("thrice").count == 3)
    }

    @Test(arguments: TestStore.all) func aPoolWithoutTheSchedulerMakesNothing(store: TestStore) async throws {
        let queue = try await store.open()
        try await queue.addSchedule(Schedule(name: "now", request: try request(), timing: .at(Date())))
        var options = quickOptions(stopWhen: .never)
        options.runsScheduler = false
        let pool = WorkerPool(queue: queue, queues: ["cron"], executors: BuiltinExecutors.all, options: options)
        let running = Task { try await pool.run() }
        try await Task.sleep(for: .milliseconds(300))
        running.cancel()
        // A hang detector: a CI run three times slower than a quiet machine took over 5 s.
        try await within(.seconds(30), "the pool to stop") { try await running.value }
        #expect(try await queue.scheduleRuns("now").isEmpty)
    }

}
