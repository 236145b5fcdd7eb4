import Foundation

extension JobQueue {
    // MARK: Schedules

    /// Adds a schedule, or replaces the one with the same name in one transaction (its count
    /// of jobs made starts again; the jobs it already made stay). Writes a `schedule` event.
    ///
    /// ```swift
    /// try await queue.addSchedule(Schedule(
    ///     name: "hourly-sync", request: try JobRequest(executor: "sync", payloadJSON: "{}"),
    ///     timing: .cron(try CronExpression("@hourly"))))
    /// ```
    ///
    /// - Throws: ``JobQueueError/invalidInput(_:)`` for a bad name, interval, count or job.
    @discardableResult
    public func addSchedule(_ schedule: Schedule) async throws -> ScheduleStatus {
        let status = try await store.addSchedule(schedule, now: Date())
        wakeWorkers()
        return status
    }

    /// Every schedule, by name.
    public func schedules() async throws -> [ScheduleStatus] {
        try await store.schedules()
    }

    /// One schedule, or nil.
    public func schedule(_ name: String) async throws -> ScheduleStatus? {
        try await store.schedule(name)
    }

    /// The jobs a schedule made, newest occurrence first (``Job/schedule``, ``Job/occurrence``).
    public func scheduleRuns(_ name: String, limit: Int = 10) async throws -> [Job] {
        guard limit >= 0 else { throw JobQueueError.invalidInput("limit must not be negative, got \(limit)") }
        return try await store.scheduleRuns(name, limit: limit)
    }

    /// Stops a schedule from making jobs until ``resumeSchedule(_:)``.
    @discardableResult
    public func pauseSchedule(_ name: String) async throws -> ScheduleStatus {
        try await store.setSchedulePaused(name, paused: true, now: Date())
    }

    /// Lets a paused schedule go on from now: the occurrences it missed while paused are not made.
    @discardableResult
    public func resumeSchedule(_ name: String) async throws -> ScheduleStatus {
        let status = try await store.setSchedulePaused(name, paused: false, now: Date())
        wakeWorkers()
        return status
    }

    /// Removes a schedule; the jobs it made stay.
    public func removeSchedule(_ name: String) async throws {
        try await store.removeSchedule(name, now: Date())
    }

    /// The scheduler's step: makes the job of every occurrence due at `now` (by each schedule's
    /// missed policy) and advances the schedules, in one transaction; returns the jobs made.
    /// Worker pools run it; any number of processes may, since an occurrence's job is unique.
    @discardableResult
    public func runDueSchedules(now: Date = Date()) async throws -> [JobID] {
        let made = try await store.runDueSchedules(now: now)
        if !made.isEmpty { wakeWorkers() }
        return made
    }

    /// The earliest occurrence an active schedule waits for.
    public func nextScheduledOccurrence() async throws -> Date? {
        try await store.nextScheduledOccurrence()
    }
}
