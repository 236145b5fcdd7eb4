import Foundation
import JobQCore

/// Schedules: stored templates with their next occurrence; the scheduler's tick makes the jobs
/// of due occurrences and advances each schedule in one transaction.
extension SQLStore {
    /// Adds a schedule, or replaces the one of the same name (its count of jobs made starts
    /// again; the jobs it made stay). Returns it as stored.
    package func addSchedule(_ schedule: Schedule, now: Date) async throws -> ScheduleStatus {
        try schedule.validate()
        // The timing's columns, as stored.
        let timing: (kind: String, start: Double?, every: Double?, times: Int?, cron: String?, zone: String) =
            switch schedule.timing {
            case .at(let date): ("at", date.timeIntervalSince1970, nil, nil, nil, "UTC")
            case .every(let interval, let count, let first):
                (
                    "every", (first ?? now.addingTimeInterval(interval.inSeconds)).timeIntervalSince1970,
                    interval.inSeconds, count, nil, "UTC"
                )
            case .cron(let expression, let timeZone): ("cron", nil, nil, nil, expression.text, timeZone.identifier)
            }
        let stored = Schedule.Timing.stored(
            kind: timing.kind, start: timing.start, every: timing.every, times: timing.times, cron: timing.cron,
            zone: timing.zone)
        // The first occurrence: an `at` in the past runs at once (as a missed one would).
        let next: Double? =
            switch stored {
            case .at(let date): date.timeIntervalSince1970
            case .every(_, _, let first?): first.timeIntervalSince1970
            default: ScheduleClock.occurrence(after: now, timing: stored, made: 0)?.timeIntervalSince1970
            }
        let request = schedule.request
        let options = request.options
        let seconds = now.timeIntervalSince1970
        typealias P = AddSchedule
        return try await write(.short) { db in
            let existed =
                try db.fetchOne(
                    Bool.self, sql: "SELECT EXISTS (SELECT 1 FROM jobq_schedules WHERE name = ?)",
                    arguments: [schedule.name]
                ) ?? false
            try db.execute(
                sql: """
                    INSERT INTO jobq_schedules (name, executor, payload, queue, priority, max_attempts, timeout, kind, start_at, every, times,
                        cron, time_zone, missed, catch_up_limit, paused, next_run_at, made, created_at, updated_at)
                    VALUES (\(P.name), \(P.executor), \(P.payload), \(P.queue), \(P.priority), \(P.maxAttempts), \(P.timeout),
                        \(P.kind), \(P.start), \(P.every), \(P.times), \(P.cron), \(P.zone), \(P.missed), \(P.catchUpLimit), 0,
                        \(P.nextRunAt), 0, \(P.now), \(P.now))
                    ON CONFLICT (name) DO UPDATE SET executor = excluded.executor, payload = excluded.payload, queue = excluded.queue,
                        priority = excluded.priority, max_attempts = excluded.max_attempts, timeout = excluded.timeout,
                        kind = excluded.kind, start_at = excluded.start_at, every = excluded.every, times = excluded.times,
                        cron = excluded.cron, time_zone = excluded.time_zone, missed = excluded.missed,
                        catch_up_limit = excluded.catch_up_limit, paused = 0, next_run_at = excluded.next_run_at, made = 0,
                        updated_at = excluded.updated_at
                    """,
                arguments: P.arguments([
                    .name: schedule.name, .executor: request.executor, .payload: JSONText.minified(request.payloadJSON),
                    .queue: options.queue, .priority: options.priority, .maxAttempts: options.maxAttempts,
                    .timeout: options.timeout?.inSeconds, .kind: timing.kind, .start: timing.start,
                    .every: timing.every,
                    .times: timing.times, .cron: timing.cron, .zone: timing.zone, .missed: schedule.missed.rawValue,
                    .catchUpLimit: schedule.catchUpLimit,
                    .nextRunAt: next, .now: seconds
                ]))
            try StoreSQL.scheduleEvent(db, name: schedule.name, change: existed ? "replaced" : "added", now: seconds)
            return try StoreSQL.schedule(db, schedule.name)!
        }
    }

    package func schedules() async throws -> [ScheduleStatus] {
        try await read { db in
            try db.fetchRows(sql: "SELECT \(ScheduleStatus.columns) FROM jobq_schedules ORDER BY name").map(
                ScheduleStatus.init)
        }
    }

    package func schedule(_ name: String) async throws -> ScheduleStatus? {
        try await read(.short) { db in try StoreSQL.schedule(db, name) }
    }

    /// The jobs a schedule made, newest occurrence first.
    package func scheduleRuns(_ name: String, limit: Int) async throws -> [Job] {
        try await read(.short) { db in
            try db.fetchRows(
                sql: "SELECT \(Job.columns) FROM jobq_jobs WHERE schedule = ? ORDER BY occurrence DESC LIMIT ?",
                arguments: [name, limit]
            ).map { Job($0) }
        }
    }

    /// Pauses or resumes a schedule. A resumed one continues from `now`: no burst of the
    /// occurrences it missed while paused.
    package func setSchedulePaused(_ name: String, paused: Bool, now: Date) async throws -> ScheduleStatus {
        try await write(.short) { db in
            guard let status = try StoreSQL.schedule(db, name) else { throw StoreSQL.noSchedule(name) }
            guard status.paused != paused else { return status }
            var next = status.nextRunAt
            if !paused, let waiting = next, waiting < now {
                next =
                    status.timing.isAt
                    ? waiting : ScheduleClock.occurrence(after: now, timing: status.timing, made: status.made)
            }
            try db.execute(
                sql:
                    "UPDATE jobq_schedules SET paused = \(PauseSchedule.paused), next_run_at = \(PauseSchedule.nextRunAt), updated_at = \(PauseSchedule.updatedAt) WHERE name = \(PauseSchedule.name)",
                arguments: PauseSchedule.arguments([
                    .paused: paused, .nextRunAt: next?.timeIntervalSince1970, .updatedAt: now.timeIntervalSince1970,
                    .name: name
                ]))
            try StoreSQL.scheduleEvent(
                db, name: name, change: paused ? "paused" : "resumed", now: now.timeIntervalSince1970)
            return try StoreSQL.schedule(db, name)!
        }
    }

    /// Removes a schedule; the jobs it made stay.
    package func removeSchedule(_ name: String, now: Date) async throws {
        try await write(.short) { db in
            try db.execute(sql: "DELETE FROM jobq_schedules WHERE name = ?", arguments: [name])
            guard db.changesCount == 1 else { throw StoreSQL.noSchedule(name) }
            try StoreSQL.scheduleEvent(db, name: name, change: "removed", now: now.timeIntervalSince1970)
        }
    }

    /// The earliest occurrence any active schedule waits for.
    package func nextScheduledOccurrence() async throws -> Date? {
        try await read(.short) { db in
            try db.fetchOne(
                Double.self,
                sql: "SELECT MIN(next_run_at) FROM jobq_schedules WHERE paused = 0 AND next_run_at IS NOT NULL"
            )
            .map(Date.init(timeIntervalSince1970:))
        }
    }

    /// Makes the jobs of every occurrence due at `now` and advances the schedules, in one
    /// transaction. A job's (schedule, occurrence) is unique, so a scheduler in another process
    /// doing the same makes nothing twice. Returns the ids of the jobs made.
    package func runDueSchedules(now: Date) async throws -> [JobID] {
        let seconds = now.timeIntervalSince1970
        return try await write(.short) { db in
            let due = try db.fetchRows(
                sql:
                    "SELECT \(ScheduleStatus.columns) FROM jobq_schedules WHERE paused = 0 AND next_run_at <= ? ORDER BY next_run_at LIMIT 100",
                arguments: [seconds]
            ).map(ScheduleStatus.init)
            var made: [JobID] = []
            db.stamp(seconds)
            for schedule in due {
                guard let first = schedule.nextRunAt else { continue }
                // `skip`: one job (keyed by the first missed occurrence), run now; `catchUp`: one
                // per missed occurrence, the latest `catchUpLimit` of them.
                var occurrences =
                    schedule.missed == .skip ? [first] : ScheduleClock.occurrences(from: first, through: now, schedule)
                if case .every(_, let times?, _) = schedule.timing {
                    occurrences = Array(occurrences.prefix(max(0, times - schedule.made)))
                }
                var inserted = 0
                for occurrence in occurrences {
                    if let id = try StoreSQL.insertOccurrence(
                        db, schedule, occurrence: occurrence.timeIntervalSince1970, now: seconds)
                    {
                        made.append(id)
                        inserted += 1
                    }
                }
                let total = schedule.made + occurrences.count
                let following = ScheduleClock.occurrence(after: now, timing: schedule.timing, made: total)
                try db.execute(
                    sql:
                        "UPDATE jobq_schedules SET next_run_at = \(AdvanceSchedule.nextRunAt), made = \(AdvanceSchedule.made), updated_at = \(AdvanceSchedule.updatedAt) WHERE name = \(AdvanceSchedule.name) AND next_run_at = \(AdvanceSchedule.previousRunAt)",
                    arguments: AdvanceSchedule.arguments([
                        .nextRunAt: following?.timeIntervalSince1970, .made: total, .updatedAt: seconds,
                        .name: schedule.name, .previousRunAt: first.timeIntervalSince1970
                    ]))
            }
            return made
        }
    }
}

extension StoreSQL {
    static func schedule(_ db: some SQLTransaction, _ name: String) throws -> ScheduleStatus? {
        try db.fetchRow(sql: "SELECT \(ScheduleStatus.columns) FROM jobq_schedules WHERE name = ?", arguments: [name])
            .map(ScheduleStatus.init)
    }

    /// The parameters of a schedule's job for one occurrence.
    enum OccurrenceJob: Int32, SQLParameter {
        case queue = 1
        case executor, payload, priority, maxAttempts, now, timeout, schedule, occurrence, enqueuedData
    }

    /// A schedule's job for one occurrence, named after its schedule; nothing when that
    /// occurrence has its job already.
    static let insertOccurrenceSQL = DialectSQL { d in
        typealias P = OccurrenceJob
        let insert = jobInsertSQL(
            d,
            [
                "queue": "\(P.queue)", "executor": "\(P.executor)", "payload": "\(P.payload)",
                "priority": "\(P.priority)", "state": "'ready'", "max_attempts": "\(P.maxAttempts)",
                "run_at": "\(P.now)", "timeout": "\(P.timeout)", "created_at": "\(P.now)", "name": "\(P.schedule)",
                "schedule": "\(P.schedule)", "occurrence": "\(P.occurrence)"
            ], enqueuedData: P.enqueuedData)
        return insert + " ON CONFLICT (schedule, occurrence) WHERE schedule IS NOT NULL DO NOTHING RETURNING id"
    }

    /// One job for one occurrence; nil when that occurrence already has its job.
    static func insertOccurrence(
        _ db: some SQLTransaction, _ schedule: ScheduleStatus, occurrence: Double, now: Double
    ) throws -> JobID? {
        typealias P = OccurrenceJob
        let statement = try db.statement(sql: insertOccurrenceSQL[db.dialect])
        let event = NewJobEvent(
            EventData.enqueued(
                state: .ready, runAt: now, priority: schedule.priority, schedule: (schedule.name, occurrence)
            ).rendered, db.dialect)
        statement.bind(P.queue, schedule.queue)
        statement.bind(P.executor, schedule.executor)
        statement.bind(P.payload, schedule.payloadJSON)
        statement.bind(P.priority, schedule.priority)
        statement.bind(P.maxAttempts, schedule.maxAttempts)
        statement.bind(P.now, now)
        statement.bind(P.timeout, schedule.timeout?.inSeconds)
        statement.bind(P.schedule, schedule.name)
        statement.bind(P.occurrence, occurrence)
        event.bind(to: statement, at: P.enqueuedData)
        defer { statement.reset() }
        guard try statement.step() else { return nil }
        let id = statement.int64(0)
        event.append(
            to: db, at: now, job: id, queue: schedule.queue, executor: schedule.executor, batch: nil, workflow: nil)
        return id
    }

    static func scheduleEvent(_ db: some SQLTransaction, name: String, change: String, now: Double) throws {
        appendEvent(
            db, .schedule(name: name, change: change), job: nil, queue: nil, executor: nil, batch: nil, now: now)
    }

    static func noSchedule(_ name: String) -> JobQueueError {
        .notFound("no schedule named '\(name)'; list schedules with `jobq schedule list`")
    }
}

extension Schedule.Timing {
    var isAt: Bool {
        if case .at = self { return true }
        return false
    }

    /// The timing as stored (an `every` always has its first occurrence).
    static func stored(kind: String, start: Double?, every: Double?, times: Int?, cron: String?, zone: String)
        -> Schedule.Timing
    {
        switch kind {
        case "at": return .at(Date(timeIntervalSince1970: start ?? 0))
        case "every":
            return .every(
                Duration(storedSeconds: every ?? 1), times: times,
                start: start.map(Date.init(timeIntervalSince1970:)))
        default:
            let expression = (try? CronExpression(cron ?? "")) ?? (try! CronExpression("@yearly"))
            return .cron(expression, timeZone: TimeZone(identifier: zone) ?? TimeZone(identifier: "UTC")!)
        }
    }
}

extension ScheduleStatus {
    /// The columns ``init(_:)`` reads, in the order a query selects them (``columns``).
    enum Column: Int32, SQLColumns {
        case name, executor, payload, queue, priority, maxAttempts, timeout, kind, startAt, every, times, cron, timeZone
        case missed, catchUpLimit, paused, nextRunAt, made, createdAt, updatedAt
    }

    static let columns = Column.list

    /// Reads a row selected with ``columns``.
    init(_ row: some ColumnReader) {
        typealias C = Column
        self.init(
            name: row.string(C.name),
            executor: row.string(C.executor),
            payloadJSON: row.string(C.payload),
            queue: row.string(C.queue),
            priority: row.int(C.priority),
            maxAttempts: row.int(C.maxAttempts),
            timeout: row.optionalDouble(C.timeout).map(Duration.init(storedSeconds:)),
            timing: Schedule.Timing.stored(
                kind: row.string(C.kind), start: row.optionalDouble(C.startAt), every: row.optionalDouble(C.every),
                times: row.optionalInt64(C.times).map(Int.init), cron: row.optionalString(C.cron),
                zone: row.string(C.timeZone)),
            missed: Schedule.MissedPolicy(rawValue: row.string(C.missed)) ?? .skip,
            catchUpLimit: row.int(C.catchUpLimit),
            paused: row.int64(C.paused) != 0,
            nextRunAt: row.optionalDouble(C.nextRunAt).map(Date.init(timeIntervalSince1970:)),
            made: row.int(C.made),
            createdAt: Date(timeIntervalSince1970: row.double(C.createdAt)),
            updatedAt: Date(timeIntervalSince1970: row.double(C.updatedAt)))
    }
}

/// A schedule paused or resumed.
private enum PauseSchedule: Int32, SQLParameter, CaseIterable {
    case paused = 1
    case nextRunAt, updatedAt, name
}

/// A schedule advanced past the occurrences it made.
private enum AdvanceSchedule: Int32, SQLParameter, CaseIterable {
    case nextRunAt = 1
    case made, updatedAt, name, previousRunAt
}

/// A schedule's row, added or replaced.
private enum AddSchedule: Int32, SQLParameter, CaseIterable {
    case name = 1
    case executor, payload, queue, priority, maxAttempts, timeout, kind, start, every, times, cron, zone
    case missed, catchUpLimit, nextRunAt, now
}
