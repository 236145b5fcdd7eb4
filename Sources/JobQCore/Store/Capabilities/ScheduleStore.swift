import Foundation

/// Schedules (jobs enqueued at the occurrences of a cron expression or an interval) and triggers
/// (jobs enqueued when an event is emitted). Each run advances its schedule in the transaction
/// that enqueues its job.
///
/// ```swift
/// let enqueued = try await schedules.runDueSchedules(now: Date())
/// ```
package protocol ScheduleStore: AnyObject, Sendable {
    func addSchedule(_ schedule: Schedule, now: Date) async throws -> ScheduleStatus
    func schedule(_ name: String) async throws -> ScheduleStatus?
    func schedules() async throws -> [ScheduleStatus]
    func scheduleRuns(_ name: String, limit: Int) async throws -> [Job]
    func setSchedulePaused(_ name: String, paused: Bool, now: Date) async throws -> ScheduleStatus
    func removeSchedule(_ name: String, now: Date) async throws
    func runDueSchedules(now: Date) async throws -> [JobID]
    func nextScheduledOccurrence() async throws -> Date?

    func addTrigger(_ trigger: Trigger, now: Date) async throws -> TriggerStatus
    func triggers(event: String?) async throws -> [TriggerStatus]
    func setTriggerPaused(event: String, task: String, paused: Bool, now: Date) async throws -> TriggerStatus
    func removeTrigger(event: String, task: String, now: Date) async throws
    func emit(event: String, payloadJSON: String, dedupe: String?, now: Date) async throws -> Emitted
}
