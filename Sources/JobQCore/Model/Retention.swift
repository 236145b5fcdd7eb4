/// How long a queue keeps its finished jobs, by state; nil keeps them for ever
/// (``JobQueue/setRetention(_:for:states:)``). A job's events go with it.
///
/// ```swift
/// try await queue.setRetention(QueueRetention(succeeded: .seconds(86_400), dead: nil), for: "imports")
/// ```
public struct QueueRetention: Sendable, Hashable, Codable {
    public var succeeded: Duration?
    public var dead: Duration?
    public var cancelled: Duration?

    public init(
        succeeded: Duration? = QueueRetention.standard.succeeded, dead: Duration? = QueueRetention.standard.dead,
        cancelled: Duration? = QueueRetention.standard.cancelled
    ) {
        self.succeeded = succeeded
        self.dead = dead
        self.cancelled = cancelled
    }

    /// jobq's default: succeeded and cancelled jobs 7 days, dead ones 30 (time to look into
    /// them and retry).
    public static let standard = QueueRetention(
        standardSucceeded: .seconds(7 * 86_400), dead: .seconds(30 * 86_400), cancelled: .seconds(7 * 86_400))

    private init(standardSucceeded: Duration?, dead: Duration?, cancelled: Duration?) {
        self.succeeded = standardSucceeded
        self.dead = dead
        self.cancelled = cancelled
    }

    /// How long jobs that ended in `state` are kept (nil: for ever, or not a final state).
    public func keeps(_ state: JobState) -> Duration? {
        switch state {
        case .succeeded: succeeded
        case .dead: dead
        case .cancelled: cancelled
        default: nil
        }
    }

    /// `succeeded 7d, dead 30d, cancelled 7d` (`forever` for nil).
    public var summary: String {
        [("succeeded", succeeded), ("dead", dead), ("cancelled", cancelled)].map {
            "\($0.0) \($0.1.map(DurationParser.format) ?? "forever")"
        }.joined(separator: ", ")
    }

    private enum CodingKeys: String, CodingKey {
        case succeededSeconds, deadSeconds, cancelledSeconds
    }

    /// Encoded in seconds, `null` for ever: `{"succeededSeconds": 604800, "deadSeconds": null, ...}`.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(succeeded?.inSeconds, forKey: .succeededSeconds)
        try container.encode(dead?.inSeconds, forKey: .deadSeconds)
        try container.encode(cancelled?.inSeconds, forKey: .cancelledSeconds)
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        func duration(_ key: CodingKeys) throws -> Duration? {
            try container.decodeIfPresent(Double.self, forKey: key).map(Duration.init(storedSeconds:))
        }
        self.init(
            standardSucceeded: try duration(.succeededSeconds), dead: try duration(.deadSeconds),
            cancelled: try duration(.cancelledSeconds))
    }

    /// Throws unless every period is positive.
    func check() throws(JobQueueError) {
        for (name, period) in [("succeeded", succeeded), ("dead", dead), ("cancelled", cancelled)] {
            if let period, period <= .zero {
                throw .invalidInput(
                    "keeping \(name) jobs for \(DurationParser.format(period)) would delete them as they finish: "
                        + "give a positive period such as 7d, or keep them for ever (nil; `forever` on the command line)"
                )
            }
            if let period { try DurationParser.checkStorable(period, what: "keeping \(name) jobs") }
        }
    }
}

/// The store-wide retention: the default for queues without their own, and how long events
/// are kept (``JobQueue/setDefaultRetention(_:)``).
///
/// ```swift
/// try await queue.setDefaultRetention(StoreRetention(jobs: .standard, events: .seconds(14 * 86_400)))
/// ```
public struct StoreRetention: Sendable, Hashable, Codable {
    /// For queues without retention of their own.
    public var jobs: QueueRetention
    /// Events older than this are deleted, whatever their job; nil: kept (until their job is
    /// deleted). One horizon for the whole feed, so a follower's cursor is either kept or told.
    public var events: Duration?

    public init(jobs: QueueRetention = .standard, events: Duration? = StoreRetention.standardEvents) {
        self.jobs = jobs
        self.events = events
    }

    /// jobq's default for events: 30 days, the longest a job is kept by default, so a dead job
    /// keeps its history while it is kept.
    public static let standardEvents: Duration? = .seconds(30 * 86_400)

    public static let standard = StoreRetention()

    private enum CodingKeys: String, CodingKey {
        case jobs, eventsSeconds
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(jobs, forKey: .jobs)
        try container.encode(events?.inSeconds, forKey: .eventsSeconds)
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            jobs: try container.decode(QueueRetention.self, forKey: .jobs),
            events: try container.decodeIfPresent(Double.self, forKey: .eventsSeconds).map(
                Duration.init(storedSeconds:)))
    }
}

/// What one cleaner pass deleted (``JobQueue/clean(batch:pause:)``).
public struct CleanerReport: Sendable, Hashable, Codable {
    /// Finished jobs deleted, with their events.
    public var jobs: Int = 0
    /// Events deleted for their age.
    public var events: Int = 0
    /// Finished jobs past their retention kept because something unfinished still refers to
    /// them (a running workflow, a lane, an open batch, a tracking set, a waiting dependent, a
    /// unique key they hold).
    public var keptForReferences: Int = 0
    /// False when another process holds the cleaner's lease (nothing was done).
    public var ran: Bool = true
}
