import Foundation

/// What happened to a job (or a batch, or a tracking set).
public enum EventKind: String, Sendable, Hashable, CaseIterable, Codable {
    /// The job was stored. Data: `state`, `runAt`, `priority`.
    case enqueued
    /// An attempt started (written with the worker's next transaction; a job claimed ahead has
    /// none while it waits in the worker's buffer). Data: `attempt`, `worker`.
    case started
    /// The executor reported progress. Data: `fraction`, `message`, and/or `data`.
    case progress
    /// Data: `attempt`, `result`.
    case succeeded
    /// An attempt failed. Data: `attempt`, `error`, `willRetry`, `retryAt`.
    case failed
    /// An attempt ran past its timeout. Data: `attempt`, `error`, `willRetry`.
    case timedOut
    /// Out of attempts (or not retryable). Data: `attempt`, `error`.
    case dead
    /// Data: `from` (the state it was cancelled in).
    case cancelled
    /// Handed back unfinished at shutdown, or claimed ahead by a worker that died before the
    /// attempt started; the attempt does not count. Data: `attempt`, and `reason` for the latter.
    case released
    /// The executor asked to run again later without using an attempt. Data: `until`, `snoozes`.
    case snoozed
    /// A durable function recorded a step (``JobContext/step(_:_:)->_``), a sleep or a wait, or a
    /// wait ended. Data: `attempt`, `position`, `name`, `kind` (`step`, `sleep`, `signal`,
    /// `event`, `call`), `wakeAt`, `finished`, and for a wait that ended `payload` or `timedOut`.
    case step
    /// A durable function gave its worker slot back until `until`, or until the signal or
    /// event `awaiting` arrives. Data: `attempt`, `until`, `awaiting`.
    case parked
    /// A signal was sent to the job (``JobQueue/signal(job:name:payloadJSON:)``). Data: `name`,
    /// `signal` (its id), `woke` (the job was parked for it and is ready now).
    case signal
    /// Cancelling a durable function was asked for (``JobQueue/cancel(_:)``): it runs once more,
    /// its sleeps, waits and calls throwing ``FunctionCancelled`` so that it can compensate, and
    /// then ends `cancelled`. Data: `from` (its state when asked).
    case cancelling
    /// Made ready again by `retry`. Data: `maxAttempts`.
    case retried
    /// Its deadline to start (``JobOptions/expiresAt``) passed before an attempt started: the
    /// job is `cancelled` without running. Data: `from` (the state it waited in), `reason`.
    case expired
    /// An enqueue with the job's unique key changed it before it started (``UniqueConflict``):
    /// its payload and priority, and for a debounce its run time. Data: `by` (`replace` or
    /// `debounce`), `runAt`, `priority`.
    case updated
    /// A tracking set fired. Data: `set`, `round`, `results` (by member).
    case tracking
    /// A batch finished. Data: `name`, `counts`, `completeJob`, `successJob`.
    case batch
    /// A workflow group finished. Data: `group`, `name`, `path`, `kind`, `state` (`succeeded`,
    /// `failed` or `cancelled`), `counts`, and `failures` (the members that died or were
    /// cancelled: `job` or `group`, `state`, `error`).
    case group
    /// A workflow finished. Data: `name`, `state`, `counts` (its steps by state), `error`.
    case workflow
    /// A lane ran out of jobs (`state`: `drained`) or stopped on a failure (`halted`). Data:
    /// `lane`, `state`, `job` (the last or the failed one).
    case lane
    /// A job of a tree and everything below it finished (post-order), or were cancelled with
    /// the tree. Data: `node` (its path of node names), `job`, `group`, `path`, `state`,
    /// `counts` (the subtree's jobs: `jobs`, `succeeded`, `failed`, `cancelled`; absent for a
    /// subtree cancelled with its tree), `failures`, `error`.
    case subtree
    /// A schedule was added, replaced, paused, resumed or removed. Data: `schedule`, `change`.
    case schedule
    /// A tree finished, once, after its last job. Data: `tree`, `node` (the root's), `job`,
    /// `state`, `counts` (all its jobs), `failures` (jobs that died or were cancelled, at most
    /// 50, dead ones first), `error`.
    case tree
    /// A trigger was added, replaced, paused, resumed or removed, or its event was emitted.
    /// Data: `event`, `task` (not for `emitted`), `change`; for `emitted`: `jobs` (ids made),
    /// and `dedupe` when given.
    case trigger
    /// An operator's bulk action (``JobQueue/perform(_:where:through:progress:)``) ended; each job it
    /// changed has its own event too. Data: `action`, `filter`, `matched`, `changed`, `skipped`
    /// (counts by reason).
    case bulk

    /// Parses a kind as users type it, with an error listing the valid kinds.
    public init(parsing text: String) throws(JobQueueError) {
        guard
            let kind = EventKind(rawValue: text)
                ?? EventKind.allCases.first(where: { $0.rawValue.lowercased() == text.lowercased() })
        else {
            throw .invalidInput(
                "unknown event kind '\(text)'; valid kinds are: "
                    + EventKind.allCases.map(\.rawValue).joined(separator: ", "))
        }
        self = kind
    }
}

/// One entry of the event feed. `id` is the cursor: resume with `since: event.id`.
///
/// ```swift
/// for try await event in queue.events(EventFilter(executor: "sum")) {
///     print(event.id, event.kind, event.dataJSON ?? "")
/// }
/// ```
public struct JobEvent: Sendable, Hashable, Identifiable {
    public var id: Int64
    public var jobID: JobID?
    public var kind: EventKind
    public var queue: String?
    public var executor: String?
    public var batch: String?
    /// The workflow of the job, group or workflow the event is about.
    public var workflowID: WorkflowID?
    /// Details, as JSON text (see ``EventKind`` for each kind's fields).
    public var dataJSON: String?
    public var createdAt: Date

    package init(
        id: Int64, jobID: JobID?, kind: EventKind, queue: String?, executor: String?, batch: String?,
        workflowID: WorkflowID?,
        dataJSON: String?, createdAt: Date
    ) {
        self.id = id
        self.jobID = jobID
        self.kind = kind
        self.queue = queue
        self.executor = executor
        self.batch = batch
        self.workflowID = workflowID
        self.dataJSON = dataJSON
        self.createdAt = createdAt
    }

    /// Decodes the details.
    public func data<T: Decodable>(as type: T.Type) throws -> T? {
        guard let dataJSON else { return nil }
        return try JSONDecoder().decode(T.self, from: Data(dataJSON.utf8))
    }

    /// The event as one line of JSON: `id`, `jobId`, `kind`, `queue`, `executor`, `batch`,
    /// `workflow`, `data`, `time`.
    public var jsonLine: String {
        let fields: [(String, String)] = [
            ("id", String(id)),
            ("jobId", jobID.map(String.init) ?? "null"),
            ("kind", JSONText.string(kind.rawValue)),
            ("queue", queue.map(JSONText.string) ?? "null"),
            ("executor", executor.map(JSONText.string) ?? "null"),
            ("batch", batch.map(JSONText.string) ?? "null"),
            ("workflow", workflowID.map { String($0) } ?? "null"),
            ("data", dataJSON ?? "null"),
            ("time", JSONText.string(ISO8601.string(createdAt)))
        ]
        return "{" + fields.map { "\(JSONText.string($0.0)):\($0.1)" }.joined(separator: ",") + "}"
    }
}

/// Which events a subscriber wants. Empty fields match everything.
public struct EventFilter: Sendable, Hashable {
    public var jobIDs: Set<JobID>
    public var executor: String?
    public var queue: String?
    public var batch: String?
    /// Events of this workflow: its steps', its groups' and its own.
    public var workflow: WorkflowID?
    public var kinds: Set<EventKind>

    public init(
        jobIDs: Set<JobID> = [], executor: String? = nil, queue: String? = nil, batch: String? = nil,
        workflow: WorkflowID? = nil,
        kinds: Set<EventKind> = []
    ) {
        self.jobIDs = jobIDs
        self.executor = executor
        self.queue = queue
        self.batch = batch
        self.workflow = workflow
        self.kinds = kinds
    }
}

/// Builds the JSON objects stored as event data, skipping nil fields.
///
/// Appends to one string: events are written for every job transition, so this avoids an
/// array of fields and a join per event.
package struct JSONObjectBuilder {
    private var body = ""

    /// Adds a field whose value is already JSON text.
    package mutating func add(_ key: String, raw value: String?) {
        guard let value else { return }
        body += body.isEmpty ? "{" : ","
        body += JSONText.string(key)
        body += ":"
        body += value
    }

    package mutating func add(_ key: String, string value: String?) { add(key, raw: value.map(JSONText.string)) }
    package mutating func add(_ key: String, int value: Int?) { add(key, raw: value.map { String($0) }) }
    package mutating func add(_ key: String, number value: Double?) { add(key, raw: value.map(JSONText.number)) }
    package mutating func add(_ key: String, bool value: Bool?) { add(key, raw: value.map { $0 ? "true" : "false" }) }
    /// A date as ISO 8601 text, which never needs escaping.
    package mutating func add(_ key: String, date value: Date?) {
        add(key, raw: value.map { "\"" + ISO8601.string($0) + "\"" })
    }

    package var text: String { body.isEmpty ? "{}" : body + "}" }

    package init() {
    }
}
