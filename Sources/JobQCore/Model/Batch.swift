import Foundation

/// A group of jobs that finishes as a whole, like a Sidekiq batch or a Celery chord.
///
/// Create it, enqueue jobs into it (``JobOptions/batch``), and close it. When it is closed and
/// every member has reached a final state, it fires once: it enqueues its `onComplete` callback
/// (always) and its `onSuccess` callback (if every member succeeded), each with the summary
/// added to its payload under `"batch"`, and writes a `batch` event.
///
/// ```swift
/// try await queue.createBatch("import-42", onComplete: try JobRequest(executor: "echo", payloadJSON: #"{"report": true}"#))
/// for file in files {
///     try await queue.enqueue(Resize.self, .init(file: file), options: .init(batch: "import-42"))
/// }
/// try await queue.closeBatch("import-42")
/// ```
public struct BatchStatus: Sendable, Hashable, Codable {
    public enum State: String, Sendable, Hashable, Codable {
        /// Taking members.
        case open
        /// Taking no more members; fires when the last one finishes.
        case closed
        /// Finished; its callbacks were enqueued.
        case fired
    }

    public var name: String
    public var state: State
    public var total: Int
    public var succeeded: Int
    public var dead: Int
    public var cancelled: Int
    /// Members not yet in a final state.
    public var pending: Int { total - succeeded - dead - cancelled }
    public var completeJobID: JobID?
    public var successJobID: JobID?
    public var createdAt: Date
    public var closedAt: Date?
    public var firedAt: Date?

    package init(
        name: String, state: State, total: Int, succeeded: Int, dead: Int, cancelled: Int, completeJobID: JobID? = nil,
        successJobID: JobID? = nil, createdAt: Date, closedAt: Date? = nil, firedAt: Date? = nil
    ) {
        self.name = name
        self.state = state
        self.total = total
        self.succeeded = succeeded
        self.dead = dead
        self.cancelled = cancelled
        self.completeJobID = completeJobID
        self.successJobID = successJobID
        self.createdAt = createdAt
        self.closedAt = closedAt
        self.firedAt = firedAt
    }
}

/// A member of a tracking set: every job of an executor, or the jobs enqueued under a name.
public enum TrackingMember: Sendable, Hashable, CustomStringConvertible {
    case executor(String)
    case job(named: String)

    /// Parses `sum` as an executor and `job:nightly` as a named job.
    public init(parsing text: String) throws(JobQueueError) {
        if text.hasPrefix("job:") {
            let name = String(text.dropFirst(4))
            guard !name.isEmpty else { throw .invalidInput("tracking member '\(text)' names no job; use job:NAME") }
            self = .job(named: name)
        } else {
            guard !text.isEmpty else { throw .invalidInput("a tracking member must be an executor name or job:NAME") }
            self = .executor(text)
        }
    }

    public var description: String {
        switch self {
        case .executor(let name): return name
        case .job(let name): return "job:\(name)"
        }
    }

    package var kind: String {
        if case .executor = self { return "executor" }
        return "job"
    }

    package var key: String {
        switch self {
        case .executor(let name), .job(let name): return name
        }
    }
}

/// A tracking set as stored: its members and how many times it has fired.
public struct TrackingSetStatus: Sendable, Hashable, Codable {
    public var name: String
    /// Members as `executor` or `job:NAME`.
    public var members: [String]
    /// Members with a new result since the last firing.
    public var fresh: [String]
    /// How many times it has fired.
    public var round: Int
    public var createdAt: Date

    package init(name: String, members: [String], fresh: [String], round: Int, createdAt: Date) {
        self.name = name
        self.members = members
        self.fresh = fresh
        self.round = round
        self.createdAt = createdAt
    }
}
