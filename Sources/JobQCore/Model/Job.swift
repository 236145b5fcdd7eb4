import Foundation

/// A job's identifier: monotonic, never reused within a store.
public typealias JobID = Int64

/// A snapshot of one job as stored.
///
/// Payloads and results are kept as the JSON text that was stored, so nothing is lost or
/// re-encoded on the way through. Decode them with ``payload(as:)`` and ``result(as:)``:
///
/// ```swift
/// if let job = try await queue.job(id), job.state == .succeeded {
///     let output = try job.result(as: Sum.Output.self)
/// }
/// ```
public struct Job: Sendable, Hashable, Identifiable {
    public var id: JobID
    public var queue: String
    /// The name of the ``Executor`` that runs the job.
    public var executor: String
    public var state: JobState
    /// Higher runs first within a queue.
    public var priority: Int
    /// The input, as JSON text.
    public var payloadJSON: String
    /// The output of the successful attempt, as JSON text.
    public var resultJSON: String?
    /// The error of the last failed attempt.
    public var error: String?
    /// How many attempts have started (the running attempt included).
    public var attempt: Int
    public var maxAttempts: Int
    /// When the job may run (or, for a failed job, when it is retried).
    public var runAt: Date
    /// How long one attempt may run before it is cancelled and counted as failed.
    public var timeout: Duration?
    public var createdAt: Date
    /// When the latest attempt started.
    public var startedAt: Date?
    /// When the job reached a final state.
    public var finishedAt: Date?
    /// The latest progress reported with ``JobContext/progress(_:message:)``, from 0 to 1.
    public var progress: Double?
    public var progressMessage: String?
    /// The latest value reported with ``JobContext/update(_:)``, as JSON text.
    public var updateJSON: String?
    /// The state a re-entrant executor continues from, as JSON text.
    public var checkpointJSON: String?
    /// How many times the executor snoozed the job.
    public var snoozes: Int
    /// The job's name, if it was given one.
    public var name: String?
    /// The batch the job belongs to.
    public var batch: String?
    /// The workflow the job is a step of.
    public var workflowID: WorkflowID?
    /// The innermost workflow group the job is a member of.
    public var groupID: Int64?
    /// The lane the job was appended to.
    public var lane: String?
    /// How many of its dependencies have not succeeded yet (a `waiting` job's count).
    public var unmetDependencies: Int
    /// Dependencies that died or were cancelled and that the job ignored or ran despite, as a
    /// JSON array of `{"job", "state", "error"}`.
    public var failedDependenciesJSON: String?
    /// The job tree node it is a job of (see ``WorkflowStatus/trees``).
    public var treeNode: Int64?
    /// The schedule that made it, and for which occurrence.
    public var schedule: String?
    public var occurrence: Date?
    /// The job's unique key (see ``JobOptions/unique``), kept after the job lets go of it.
    public var uniqueKey: String?
    /// The partition given at enqueue (``JobOptions/partition``), if any.
    public var partition: String?
    /// The latest time an attempt may start (``JobOptions/expiresAt``), if any.
    public var expiresAt: Date?

    /// Decodes the payload as an executor's input type.
    public func payload<T: Decodable>(as type: T.Type) throws -> T {
        try JSONDecoder().decode(T.self, from: Data(payloadJSON.utf8))
    }

    /// Decodes the result, or returns nil when the job has none (yet).
    public func result<T: Decodable>(as type: T.Type) throws -> T? {
        guard let resultJSON else { return nil }
        return try JSONDecoder().decode(T.self, from: Data(resultJSON.utf8))
    }
}

extension Job {
    /// The job as one line of JSON, in the documented format: `id`, `queue`, `executor`,
    /// `state`, `priority`, `payload`, `result`, `error`, `attempt`, `maxAttempts`, `runAt`,
    /// `timeout` (seconds), `createdAt`, `startedAt`, `finishedAt`, `progress`,
    /// `progressMessage`, `name`, `batch`, `snoozes`, `workflow`, `lane`, `unmetDependencies`,
    /// `failedDependencies`, `treeNode`, `schedule`, `occurrence`, `unique`, `partition`, `expiresAt`; times as ISO 8601 (UTC).
    ///
    /// The payload and result are inserted as stored (they are valid, minified JSON), so a
    /// payload round-trips byte for byte.
    public var jsonLine: String {
        var fields: [(String, String)] = [
            ("id", String(id)),
            ("queue", JSONText.string(queue)),
            ("executor", JSONText.string(executor)),
            ("state", JSONText.string(state.rawValue)),
            ("priority", String(priority)),
            ("payload", payloadJSON),
            ("result", resultJSON ?? "null"),
            ("error", error.map(JSONText.string) ?? "null"),
            ("attempt", String(attempt)),
            ("maxAttempts", String(maxAttempts)),
            ("runAt", JSONText.string(ISO8601.string(runAt)))
        ]
        fields.append(("timeout", timeout.map { JSONText.number($0.inSeconds) } ?? "null"))
        fields.append(("createdAt", JSONText.string(ISO8601.string(createdAt))))
        fields.append(("startedAt", startedAt.map { JSONText.string(ISO8601.string($0)) } ?? "null"))
        fields.append(("finishedAt", finishedAt.map { JSONText.string(ISO8601.string($0)) } ?? "null"))
        fields.append(("progress", progress.map(JSONText.number) ?? "null"))
        fields.append(("progressMessage", progressMessage.map(JSONText.string) ?? "null"))
        fields.append(("name", name.map(JSONText.string) ?? "null"))
        fields.append(("batch", batch.map(JSONText.string) ?? "null"))
        fields.append(("snoozes", String(snoozes)))
        fields.append(("workflow", workflowID.map { String($0) } ?? "null"))
        fields.append(("lane", lane.map(JSONText.string) ?? "null"))
        fields.append(("unmetDependencies", String(unmetDependencies)))
        fields.append(("failedDependencies", failedDependenciesJSON ?? "null"))
        fields.append(("treeNode", treeNode.map { String($0) } ?? "null"))
        fields.append(("schedule", schedule.map(JSONText.string) ?? "null"))
        fields.append(("occurrence", occurrence.map { JSONText.string(ISO8601.string($0)) } ?? "null"))
        fields.append(("unique", uniqueKey.map(JSONText.string) ?? "null"))
        fields.append(("partition", partition.map(JSONText.string) ?? "null"))
        fields.append(("expiresAt", expiresAt.map { JSONText.string(ISO8601.string($0)) } ?? "null"))
        return "{" + fields.map { "\(JSONText.string($0.0)):\($0.1)" }.joined(separator: ",") + "}"
    }
}
