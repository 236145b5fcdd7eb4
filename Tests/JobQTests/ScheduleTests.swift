import Foundation
import GRDB
import Testing

@testable import JobQCore
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

    /// An interval whose start has a fraction of a millisecond: its occurrences are rounded to
    /// the millisecond, and a look between a rounded occurrence and the true one must not name
    /// the same occurrence again (it made the same job twice, or counted one job that was not
    /// made, when a scheduler woke inside that half millisecond).
    @Test func aLookInsideTheRoundingOfAnOccurrenceNamesTheNextOne() async throws {
        let start = Date(timeIntervalSince1970: 1_000.0004)
        let timing = Schedule.Timing.every(.seconds(1), times: nil, start: start)
        let made = Date(timeIntervalSince1970: 1_001.000)  // the second occurrence, 1001.0004, rounded
        #expect(ScheduleClock.occurrence(after: Date(timeIntervalSince1970: 1_000.5), timing: timing, made: 1) == made)
        #expect(
            ScheduleClock.occurrence(after: Date(timeIntervalSince1970: 1_001.0002), timing: timing, made: 2)
                == Date(timeIntervalSince1970: 1_002.000))
        #expect(
            ScheduleClock.occurrence(after: made, timing: timing, made: 2) == Date(timeIntervalSince1970: 1_002.000))

        let queue = try JobQueue.inMemory()
        try await queue.addSchedule(Schedule(name: "fine", request: try request(), timing: timing))
        var jobs: [JobID] = []
        for t in [1_000.0, 1_000.0005, 1_001.0001, 1_001.0003, 1_002.0002, 1_002.5, 1_003.0001] {
            jobs += try await queue.runDueSchedules(now: Date(timeIntervalSince1970: t))
        }
        #expect(jobs.count == 4)
        let status = try #require(try await queue.schedule("fine"))
        #expect(status.made == 4, "made counts the jobs made, none twice")
        #expect(Set(try await queue.scheduleRuns("fine").map(\.occurrence)).count == 4)
        #expect(Set(status.upcoming(5)).count == 5, "upcoming occurrences are distinct")
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

    @Test func pausedMakesNothingAndResumedGoesOnFromNow() async throws {
        let store = try TemporaryStore()
        let queue = try store.open()
        try await queue.addSchedule(
            Schedule(name: "minutely", request: try request(), timing: .every(.seconds(60), start: Self.t0)))
        #expect(try await queue.runDueSchedules(now: Self.t0).count == 1)
        _ = try await queue.store.setSchedulePaused("minutely", paused: true, now: Self.t0.addingTimeInterval(10))
        #expect(try await tick(queue, from: 60, to: 300, step: 30).isEmpty)
        let resumed = try await queue.store.setSchedulePaused(
            "minutely", paused: false, now: Self.t0.addingTimeInterval(330))
        #expect(resumed.nextRunAt == Self.t0.addingTimeInterval(360), "no burst of the missed ones")
        #expect(try await tick(queue, from: 330, to: 420, step: 30).count == 2)
        try await queue.removeSchedule("minutely")
        #expect(try await queue.schedule("minutely") == nil)
        #expect(try await tick(queue, from: 420, to: 900, step: 60).isEmpty)
        #expect(try await queue.jobs(limit: 100).count == 3, "removing a schedule keeps its jobs")
        let changes = try await queue.events(after: 0, filter: EventFilter(kinds: [.schedule])).compactMap(\.dataJSON)
        #expect(changes.map { $0.contains("\"change\":\"added\"") } == [true, false, false, false])
        #expect(changes.last?.contains("\"change\":\"removed\"") == true)
        await #expect(throws: JobQueueError.self) { try await queue.removeSchedule("minutely") }
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

    @Test func twoStoresRacingOverAnHourMakeOneJobPerOccurrence() async throws {
        let store = try TemporaryStore()
        let first = try store.open()
        let second = try store.open()
        try await first.addSchedule(
            Schedule(name: "race", request: try request(), timing: .every(.seconds(60), start: Self.t0)))
        async let a = tick(first, from: 0, to: 3599, step: 7)
        async let b = tick(second, from: 0, to: 3599, step: 11)
        let made = try await a + b
        #expect(made.count == 60)
        #expect(Set(made).count == 60)
        let occurrences = try await DatabaseQueue(path: store.path).read { db in
            try Double.fetchAll(db, sql: "SELECT occurrence FROM jobs WHERE schedule = 'race' ORDER BY occurrence")
        }
        #expect(occurrences == (0..<60).map { Self.t0.timeIntervalSince1970 + Double($0) * 60 })
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
        #expect(made.createdAt.timeIntervalSince(due) < 1, "made when due, not at a poll")
        running.cancel()
        try await within(.seconds(5), "the pool to stop") { try await running.value }
        #expect(try await queue.scheduleRuns("thrice").count == 3)
    }

    /// The scheduler may be anywhere in its loop when the pool stops on its own; a cancellation
    /// that lands before it starts waiting once left it (and `jobq work --until-empty`) asleep
    /// for an hour.
    @Test func aPoolThatStopsOnItsOwnStopsItsSchedulerToo() async throws {
        for _ in 0..<40 {
            let queue = try JobQueue.inMemory()
            try await queue.enqueue(SumExecutor.self, .init(a: 1, b: 1))
            // The bug slept for an hour: 30s catches it on a machine loaded by the whole suite.
            try await work(queue, limit: .seconds(30))
        }
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
        try await within(.seconds(5), "the pool to stop") { try await running.value }
        #expect(try await queue.scheduleRuns("now").isEmpty)
    }

    @Test(arguments: [
        ("bad\u{7}name", Schedule.Timing.every(.seconds(1)), "must be 1 to 200 letters"),
        ("", Schedule.Timing.every(.seconds(1)), "must be 1 to 200 letters"),
        ("zero", Schedule.Timing.every(.zero), "the interval must be at least 1ms"),
        ("none", Schedule.Timing.every(.seconds(1), times: 0), "times must be at least 1")
    ])
    func badSchedulesAreRefusedAndNothingIsStored(name: String, timing: Schedule.Timing, message: String) async throws {
        let queue = try JobQueue.inMemory()
        await #expect {
            try await queue.addSchedule(Schedule(name: name, request: try request(), timing: timing))
        } throws: { error in
            guard case JobQueueError.invalidInput(let text) = error else { return false }
            return text.contains(message) && !text.contains("\u{7}")
        }
        #expect(try await queue.schedules().isEmpty)
    }
}
