import Foundation
import GRDB
import Testing

@testable import JobQCore
@testable import JobQSQL
@testable import JobQSQLite

/// ScheduleTests on the SQLite store only (a file, a restart, a second connection, SQLite's own locks);
/// the tests every store passes are in StoreConformance/.
extension ScheduleTests {
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
            try Double.fetchAll(db, sql: "SELECT occurrence FROM jobq_jobs WHERE schedule = 'race' ORDER BY occurrence")
        }
        #expect(occurrences == (0..<60).map { Self.t0.timeIntervalSince1970 + Double($0) * 60 })
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
