import Foundation

extension JobQueue {
    // MARK: Event triggers

    /// Adds a trigger, or replaces the task of the same event and name in one transaction (a
    /// `once` task that already ran keeps that record). Writes a `trigger` event.
    ///
    /// ```swift
    /// try await queue.addTrigger(Trigger(event: "user.signed-up", task: "welcome-mail",
    ///     request: try JobRequest(executor: "mail", payloadJSON: #"{"template": "welcome"}"#)))
    /// ```
    ///
    /// - Throws: ``JobQueueError/invalidInput(_:)`` for a bad name or job, a payload that is not
    ///   a JSON object, a dependency that is not a task of the event, or one that makes a cycle.
    @discardableResult
    public func addTrigger(_ trigger: Trigger) async throws -> TriggerStatus {
        try await store.addTrigger(trigger, now: Date())
    }

    /// The triggers of one event, or of every event, by event and task name.
    public func triggers(event: String? = nil) async throws -> [TriggerStatus] {
        try await store.triggers(event: event)
    }

    /// Stops a task from running when its event is emitted, until ``resumeTrigger(event:task:)``.
    /// Tasks that depend on it run without waiting for it meanwhile.
    @discardableResult
    public func pauseTrigger(event: String, task: String) async throws -> TriggerStatus {
        try await store.setTriggerPaused(event: event, task: task, paused: true, now: Date())
    }

    /// Lets a paused task run again at the next emit of its event.
    @discardableResult
    public func resumeTrigger(event: String, task: String) async throws -> TriggerStatus {
        try await store.setTriggerPaused(event: event, task: task, paused: false, now: Date())
    }

    /// Removes a task; the jobs it made stay.
    ///
    /// - Throws: ``JobQueueError/invalidState(_:)`` while another task of the event depends on it.
    public func removeTrigger(event: String, task: String) async throws {
        try await store.removeTrigger(event: event, task: task, now: Date())
    }

    /// Emits an event: one job per active task registered for it, in one transaction, each with
    /// `payloadJSON` set in its payload under `"event"`. Higher priority tasks come first in
    /// claim order; a task waits for the jobs of the tasks it depends on. With a `dedupe` key,
    /// a second emit of the same event and key within 24 hours makes nothing and returns the
    /// first emit's jobs. In the same transaction, every durable function waiting for the event
    /// with a filter its payload matches takes it (``Emitted/resumedFunctions``).
    ///
    /// ```swift
    /// let emitted = try await queue.emit("order.paid", payloadJSON: #"{"order": 1042}"#, dedupe: "order-1042")
    /// print(emitted.jobs.map(\.id), emitted.deduplicated)
    /// ```
    @discardableResult
    public func emit(_ event: String, payloadJSON: String = "{}", dedupe: String? = nil) async throws -> Emitted {
        let emitted = try await store.emit(event: event, payloadJSON: payloadJSON, dedupe: dedupe, now: Date())
        if !emitted.deduplicated,
            emitted.jobs.contains(where: { $0.state == .ready }) || !emitted.resumedFunctions.isEmpty
        {
            wakeWorkers()
        }
        return emitted
    }
}
