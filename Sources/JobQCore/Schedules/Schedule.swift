import Foundation

/// A named job template that makes a job at each of its occurrences: once `at` a time, `every`
/// an interval (N times or forever), or on a `cron` expression in a time zone.
///
/// Stored with ``JobQueue/addSchedule(_:)``; worker pools run the scheduler that enqueues the
/// jobs. Each occurrence makes exactly one job, however many schedulers run.
///
/// ```swift
/// try await queue.addSchedule(Schedule(
///     name: "nightly-report", request: try JobRequest(Report.self, .init()),
///     timing: .cron(try CronExpression("0 3 * * *"), timeZone: TimeZone(identifier: "Europe/Paris")!)))
/// try await queue.addSchedule(Schedule(
///     name: "warm-cache", request: try JobRequest(executor: "warm", payloadJSON: "{}"),
///     timing: .every(.seconds(90), times: 10)))
/// ```
public struct Schedule: Sendable, Hashable {
    public enum Timing: Sendable, Hashable {
        /// Once, at this time.
        case at(Date)
        /// Every `interval` (any positive duration, to the millisecond), `times` times or
        /// forever, the first at `start` (default: one interval after the schedule is added).
        case every(Duration, times: Int? = nil, start: Date? = nil)
        /// On a cron expression's occurrences in a time zone.
        case cron(CronExpression, timeZone: TimeZone = TimeZone(identifier: "UTC")!)
    }

    /// What happens to occurrences missed while no scheduler ran.
    public enum MissedPolicy: String, Sendable, Hashable, Codable, CaseIterable {
        /// One job now for all of them, then on with the schedule.
        case skip
        /// One job per missed occurrence (the latest ``Schedule/catchUpLimit`` of them).
        case catchUp
    }

    /// Letters, digits and `-_.:/@`, 1 to 200 characters.
    public var name: String
    /// Executor, payload, and the options that apply: queue, priority, maxAttempts, timeout.
    public var request: JobRequest
    public var timing: Timing
    public var missed: MissedPolicy
    public var catchUpLimit: Int

    public static let defaultCatchUpLimit = 100

    public init(
        name: String, request: JobRequest, timing: Timing, missed: MissedPolicy = .skip,
        catchUpLimit: Int = Schedule.defaultCatchUpLimit
    ) {
        self.name = name
        self.request = request
        self.timing = timing
        self.missed = missed
        self.catchUpLimit = catchUpLimit
    }

    /// Checks everything that can be checked before storing, with errors that say what to fix.
    package func validate() throws(JobQueueError) {
        try Self.validate(name: name)
        do {
            try request.validate()
        } catch {
            throw .invalidInput("schedule '\(name)': \(error.description)")
        }
        let options = request.options
        if options.setsMoreThanATemplateTakes {
            throw .invalidInput(
                "schedule '\(name)': a schedule's jobs take queue, priority, maxAttempts and timeout; not runAt, after, lane, batch, unique, partition or expiresAt "
                    + "(each occurrence already makes one job)")
        }
        guard (1...10_000).contains(catchUpLimit) else {
            throw .invalidInput("schedule '\(name)': the catch-up limit must be from 1 to 10000, got \(catchUpLimit)")
        }
        if case .every(let interval, let times, _) = timing {
            guard interval >= .milliseconds(1) else {
                throw .invalidInput(
                    "schedule '\(name)': the interval must be at least 1ms, got \(DurationParser.format(interval))")
            }
            if let times, times < 1 {
                throw .invalidInput("schedule '\(name)': times must be at least 1, got \(times)")
            }
        }
    }

    package static func validate(name: String) throws(JobQueueError) {
        try Names.check(name, what: "schedule name")
    }
}

/// A stored schedule: its template, timing, state, and what it made.
public struct ScheduleStatus: Sendable, Hashable {
    public var name: String
    public var executor: String
    public var payloadJSON: String
    public var queue: String
    public var priority: Int
    public var maxAttempts: Int
    public var timeout: Duration?
    public var timing: Schedule.Timing
    public var missed: Schedule.MissedPolicy
    public var catchUpLimit: Int
    public var paused: Bool
    /// The occurrence it waits for; nil once it has made all its jobs.
    public var nextRunAt: Date?
    /// Jobs it has made.
    public var made: Int
    public var createdAt: Date
    public var updatedAt: Date

    /// The next `count` occurrences from `nextRunAt` (none when paused or done).
    public func upcoming(_ count: Int) -> [Date] {
        guard !paused, let first = nextRunAt, count > 0 else { return [] }
        var dates = [first]
        while dates.count < count,
            let next = ScheduleClock.occurrence(after: dates.last!, timing: timing, made: made + dates.count)
        {
            dates.append(next)
        }
        return dates
    }

    /// One line of JSON: `name`, `executor`, `payload`, `queue`, `priority`, `maxAttempts`,
    /// `timeout`, `timing` (`{"at"}`, `{"every" (seconds), "times", "start"}` or `{"cron",
    /// "timeZone"}`), `missed`, `catchUpLimit`, `paused`, `nextRunAt`, `made`, `createdAt`,
    /// `updatedAt`.
    public var jsonLine: String {
        var object = JSONObjectBuilder()
        object.add("name", string: name)
        object.add("executor", string: executor)
        object.add("payload", raw: payloadJSON)
        object.add("queue", string: queue)
        object.add("priority", int: priority)
        object.add("maxAttempts", int: maxAttempts)
        object.add("timeout", raw: timeout.map { JSONText.number($0.inSeconds) } ?? "null")
        var timingObject = JSONObjectBuilder()
        switch timing {
        case .at(let date): timingObject.add("at", date: date)
        case .every(let interval, let times, let start):
            timingObject.add("every", number: interval.inSeconds)
            timingObject.add("times", raw: times.map { String($0) } ?? "null")
            timingObject.add("start", date: start)
        case .cron(let cron, let zone):
            timingObject.add("cron", string: cron.text)
            timingObject.add("timeZone", string: zone.identifier)
        }
        object.add("timing", raw: timingObject.text)
        object.add("missed", string: missed.rawValue)
        object.add("catchUpLimit", int: catchUpLimit)
        object.add("paused", bool: paused)
        object.add("nextRunAt", raw: nextRunAt.map { JSONText.string(ISO8601.string($0)) } ?? "null")
        object.add("made", int: made)
        object.add("createdAt", date: createdAt)
        object.add("updatedAt", date: updatedAt)
        return object.text
    }

    /// `cron "0 3 * * *" Europe/Paris`, `every 1m30s (10 times)`, `at 2026-12-01T09:00:00.000Z`
    public var timingDescription: String {
        switch timing {
        case .at(let date): return "at \(ISO8601.string(date))"
        case .every(let interval, let times, _):
            return "every \(DurationParser.format(interval))" + (times.map { " (\($0) times)" } ?? "")
        case .cron(let cron, let zone): return "cron \"\(cron.text)\" \(zone.identifier)"
        }
    }

    package init(
        name: String, executor: String, payloadJSON: String, queue: String, priority: Int, maxAttempts: Int,
        timeout: Duration? = nil, timing: Schedule.Timing, missed: Schedule.MissedPolicy, catchUpLimit: Int,
        paused: Bool, nextRunAt: Date? = nil, made: Int, createdAt: Date, updatedAt: Date
    ) {
        self.name = name
        self.executor = executor
        self.payloadJSON = payloadJSON
        self.queue = queue
        self.priority = priority
        self.maxAttempts = maxAttempts
        self.timeout = timeout
        self.timing = timing
        self.missed = missed
        self.catchUpLimit = catchUpLimit
        self.paused = paused
        self.nextRunAt = nextRunAt
        self.made = made
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}

/// Occurrence arithmetic shared by the store and the status.
package enum ScheduleClock {
    /// The first occurrence strictly after `date`, given how many jobs were made (`every ...
    /// times N` ends at N); nil when there is none.
    package static func occurrence(after date: Date, timing: Schedule.Timing, made: Int) -> Date? {
        switch timing {
        case .at(let at):
            return made == 0 && at > date ? at : nil
        case .every(let interval, let times, let start):
            if let times, made >= times { return nil }
            let step = interval.inSeconds
            let origin = (start ?? date).timeIntervalSince1970
            let now = date.timeIntervalSince1970
            guard now >= origin else { return Date(timeIntervalSince1970: origin) }
            // The grid point after `date`, to the millisecond. Rounding can move a point up to
            // half a millisecond below where it lies, so a point must be after `date` once
            // rounded: otherwise a look inside that half millisecond would name the occurrence
            // it has just made as the next one.
            var k = ((now - origin) / step).rounded(.down) + 1
            func point(_ k: Double) -> Double { ((origin + k * step) * 1000).rounded() / 1000 }
            while point(k) <= now { k += 1 }
            return Date(timeIntervalSince1970: point(k))
        case .cron(let cron, let zone):
            return cron.next(after: date, in: zone)
        }
    }

    /// The occurrences from `first` through `now`, the latest `catchUpLimit` of them. An
    /// interval's are computed on its grid; a cron expression's are walked, at most 100,000
    /// back (70 days of a minutely expression).
    package static func occurrences(from first: Date, through now: Date, _ schedule: ScheduleStatus) -> [Date] {
        let limit = schedule.catchUpLimit
        if case .every(let interval, _, _) = schedule.timing {
            let step = interval.inSeconds
            let count = Int(((now.timeIntervalSince(first)) / step).rounded(.down)) + 1
            return (max(0, count - limit)..<max(count, 1)).map { first.addingTimeInterval(Double($0) * step) }
        }
        var dates = [first]
        var walked = 0
        while walked < 100_000,
            let next = occurrence(after: dates.last!, timing: schedule.timing, made: schedule.made + dates.count),
            next <= now
        {
            dates.append(next)
            if dates.count > limit { dates.removeFirst() }
            walked += 1
        }
        return dates
    }
}
