import Foundation

/// A task that a named event enqueues (RWTaskKit's event and notification tasks, durable).
///
/// Every active trigger of an event makes one job when the event is emitted, in one
/// transaction: higher ``JobOptions/priority`` first in claim order, and a task that depends on
/// other tasks of the same event waits for their jobs (dependency edges, as in workflows). The
/// emitted payload is set in each job's payload under `"event"`.
///
/// ```swift
/// try await queue.addTrigger(Trigger(event: "app.launched", task: "migrate",
///     request: try JobRequest(executor: "migrate", payloadJSON: "{}", options: .init(priority: 10)), once: true))
/// try await queue.addTrigger(Trigger(event: "app.launched", task: "sync",
///     request: try JobRequest(executor: "sync", payloadJSON: "{}"), dependsOn: ["migrate"]))
/// let emitted = try await queue.emit("app.launched", payloadJSON: #"{"version": "2.1"}"#)
/// ```
public struct Trigger: Sendable, Hashable {
    /// The event's name (letters, digits, - _ . : / @).
    public var event: String
    /// The task's name, unique within its event.
    public var task: String
    /// The job to make: executor, payload (a JSON object), and the options `queue`, `priority`,
    /// `maxAttempts` and `timeout`.
    public var request: JobRequest
    /// Tasks of the same event whose jobs this task's job waits for. They must exist when the
    /// trigger is added, and may not lead back to this task.
    public var dependsOn: [String]
    /// Runs at the first emit of the event after the trigger is added, and never again (the
    /// store records it, so a restart does not run it twice).
    public var once: Bool

    public init(event: String, task: String, request: JobRequest, dependsOn: [String] = [], once: Bool = false) {
        self.event = event
        self.task = task
        self.request = request
        self.dependsOn = dependsOn
        self.once = once
    }

    package func validate() throws(JobQueueError) {
        try Names.check(event, what: "event name")
        try Names.check(task, what: "task name")
        for dependency in dependsOn { try Names.check(dependency, what: "task name in dependsOn") }
        do {
            try request.validate()
        } catch {
            throw .invalidInput("trigger \(event)/\(task): \(error.description)")
        }
        let options = request.options
        if options.setsMoreThanATemplateTakes {
            throw .invalidInput(
                "trigger \(event)/\(task): a trigger's jobs take queue, priority, maxAttempts and timeout; not runAt, after, lane, batch, unique, partition or expiresAt"
            )
        }
        guard request.payloadJSON.first(where: { !$0.isWhitespace }) == "{" else {
            throw .invalidInput(
                "trigger \(event)/\(task): the payload must be a JSON object (the emitted payload is added to it under \"event\"), "
                    + "got \(JSONText.preview(request.payloadJSON))")
        }
        if dependsOn.contains(task) {
            throw .invalidInput("trigger \(event)/\(task) cannot depend on itself")
        }
        if Set(dependsOn).count != dependsOn.count {
            throw .invalidInput("trigger \(event)/\(task): dependsOn names a task twice")
        }
    }
}

/// A stored trigger: its task, and whether it is paused or has used its one run.
public struct TriggerStatus: Sendable, Hashable {
    public var event: String
    public var task: String
    public var executor: String
    public var payloadJSON: String
    public var queue: String
    public var priority: Int
    public var maxAttempts: Int
    public var timeout: Duration?
    public var dependsOn: [String]
    public var once: Bool
    /// When a `once` task ran; it will not run again.
    public var ranOnceAt: Date?
    public var paused: Bool
    public var createdAt: Date
    public var updatedAt: Date

    /// Whether the next emit of its event makes a job for it.
    public var isActive: Bool { !paused && !(once && ranOnceAt != nil) }

    /// One line of JSON: `event`, `task`, `executor`, `payload`, `queue`, `priority`,
    /// `maxAttempts`, `timeout` (seconds), `dependsOn`, `once`, `ranOnceAt`, `paused`, `active`,
    /// `createdAt`, `updatedAt`.
    public var jsonLine: String {
        var object = JSONObjectBuilder()
        object.add("event", string: event)
        object.add("task", string: task)
        object.add("executor", string: executor)
        object.add("payload", raw: payloadJSON)
        object.add("queue", string: queue)
        object.add("priority", int: priority)
        object.add("maxAttempts", int: maxAttempts)
        object.add("timeout", raw: timeout.map { JSONText.number($0.inSeconds) } ?? "null")
        object.add("dependsOn", raw: "[" + dependsOn.map(JSONText.string).joined(separator: ",") + "]")
        object.add("once", bool: once)
        object.add("ranOnceAt", raw: ranOnceAt.map { JSONText.string(ISO8601.string($0)) } ?? "null")
        object.add("paused", bool: paused)
        object.add("active", bool: isActive)
        object.add("createdAt", date: createdAt)
        object.add("updatedAt", date: updatedAt)
        return object.text
    }

    package init(
        event: String, task: String, executor: String, payloadJSON: String, queue: String, priority: Int,
        maxAttempts: Int, timeout: Duration? = nil, dependsOn: [String], once: Bool, ranOnceAt: Date? = nil,
        paused: Bool, createdAt: Date, updatedAt: Date
    ) {
        self.event = event
        self.task = task
        self.executor = executor
        self.payloadJSON = payloadJSON
        self.queue = queue
        self.priority = priority
        self.maxAttempts = maxAttempts
        self.timeout = timeout
        self.dependsOn = dependsOn
        self.once = once
        self.ranOnceAt = ranOnceAt
        self.paused = paused
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}

/// What an emit did: the jobs it made, in the order they were stored (a task after the tasks
/// it depends on, higher priority first), or, for a repeated dedupe key, the first emit's jobs.
public struct Emitted: Sendable, Hashable {
    public var jobs: [Job]
    /// True when an emit with the same dedupe key happened within 24 hours: nothing was made,
    /// and ``jobs`` are that emit's jobs (those not pruned since).
    public var deduplicated: Bool
    /// The durable functions whose wait for this event took it
    /// (``JobContext/waitForEvent(_:where:as:timeout:)``), by job id: each has the payload
    /// as its wait's result and runs again to go on. Empty for a repeated dedupe key.
    public var resumedFunctions: [JobID]

    public init(jobs: [Job], deduplicated: Bool, resumedFunctions: [JobID] = []) {
        self.jobs = jobs
        self.deduplicated = deduplicated
        self.resumedFunctions = resumedFunctions
    }
}
