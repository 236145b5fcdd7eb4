import Foundation

/// Everything about how a job runs, apart from its executor and payload.
///
/// ```swift
/// try await queue.enqueue(Sum.self, .init(a: 1, b: 2),
///                         options: .init(queue: "math", priority: 10, delay: .seconds(30)))
/// ```
public struct JobOptions: Sendable, Hashable {
    /// The queue the job goes to. Workers claim by queue.
    public var queue: String
    /// Higher runs first within a queue. Default 0; at most ``priorityRange`` (a 32-bit
    /// integer, what every store keeps), checked when the job is enqueued.
    public var priority: Int
    /// The priorities a job may have, the same on every store.
    public static let priorityRange = Int(Int32.min)...Int(Int32.max)
    /// When the job may run at the earliest. `nil` means now.
    public var runAt: Date?
    /// How many attempts the job gets before it is `dead`. At least 1. When not given: the
    /// executor's ``RetryPolicy/maxAttempts`` for a job enqueued by its type, else
    /// ``defaultMaxAttempts``.
    public var maxAttempts: Int {
        get { givenMaxAttempts ?? Self.defaultMaxAttempts }
        set { givenMaxAttempts = newValue }
    }
    /// The attempts the caller gave; nil when it gave none.
    package var givenMaxAttempts: Int?
    /// How long one attempt may run before it is cancelled and counted as failed. Default: the
    /// executor's ``Executor/timeout``, if it has one.
    public var timeout: Duration?
    /// A name for the job, which tracking sets can follow (`.job(named:)`). Not unique.
    public var name: String?
    /// The open batch the job joins (see ``JobQueue/createBatch(_:onComplete:onSuccess:)``).
    public var batch: String?
    /// Jobs that must succeed before this one runs; until then it is `waiting`. A dependency
    /// that already succeeded counts as met. Every id must exist.
    public var after: [JobID]
    /// What a dependency that dies or is cancelled does to this job (default: cancel it).
    public var onDependencyFailure: DependencyPolicy
    /// Per-dependency overrides of ``onDependencyFailure``, by the dependency's id.
    public var dependencyPolicies: [JobID: DependencyPolicy]
    /// The lane the job is appended to: jobs of a lane run one at a time, in append order,
    /// whichever worker claims them.
    public var lane: String?
    /// Sets the lane's failure policy as the job is appended (nil: keep the lane's policy;
    /// a new lane starts with `.continue`).
    public var laneOnFailure: LaneFailurePolicy?
    /// Makes the job unique by a key: while a job with the key holds it, enqueueing returns
    /// that job instead (see ``UniqueKey``). Not for workflow steps or tree nodes.
    public var unique: UniqueKey?
    /// The partition the job counts against when its queue's limits are split by partition
    /// (``QueueLimits/partitionBy``): wins over a payload member the queue names. 1 to 200
    /// characters; ignored by a queue that is not partitioned.
    public var partition: String?
    /// The latest time an attempt of the job may start (nil: no deadline). A job that has not
    /// started by then, its first attempt or a retry, never does: it ends `cancelled` with an
    /// `expired` event and the error "expired: ...", and its dependents follow their
    /// ``DependencyPolicy``. An attempt that started in time runs to its end, and so does a job a
    /// worker claimed ahead (into its buffer) before the deadline. Must be later than ``runAt``
    /// when that is given; a deadline already past when the job is stored ends it unrun at once.
    ///
    /// ```swift
    /// // A reminder that is useless after lunch.
    /// var options = JobOptions(queue: "push")
    /// options.expiresAt = Date().addingTimeInterval(2 * 3600)
    /// ```
    public var expiresAt: Date?

    /// The queue used when none is named.
    public static let defaultQueue = "default"
    /// Attempts when none are given: the first run and two retries.
    public static let defaultMaxAttempts = 3

    public init(
        queue: String = JobOptions.defaultQueue,
        priority: Int = 0,
        runAt: Date? = nil,
        maxAttempts: Int? = nil,
        timeout: Duration? = nil,
        name: String? = nil,
        batch: String? = nil,
        after: [JobID] = [],
        onDependencyFailure: DependencyPolicy = .cancel,
        dependencyPolicies: [JobID: DependencyPolicy] = [:],
        lane: String? = nil,
        laneOnFailure: LaneFailurePolicy? = nil,
        unique: UniqueKey? = nil,
        partition: String? = nil,
        expiresAt: Date? = nil
    ) {
        self.queue = queue
        self.priority = priority
        self.runAt = runAt
        self.givenMaxAttempts = maxAttempts
        self.timeout = timeout
        self.name = name
        self.batch = batch
        self.after = after
        self.onDependencyFailure = onDependencyFailure
        self.dependencyPolicies = dependencyPolicies
        self.lane = lane
        self.laneOnFailure = laneOnFailure
        self.unique = unique
        self.partition = partition
        self.expiresAt = expiresAt
    }

    /// Options for a job that runs `delay` from now.
    public init(
        queue: String = JobOptions.defaultQueue,
        priority: Int = 0,
        delay: Duration,
        maxAttempts: Int? = nil,
        timeout: Duration? = nil,
        name: String? = nil,
        batch: String? = nil,
        after: [JobID] = [],
        onDependencyFailure: DependencyPolicy = .cancel,
        lane: String? = nil
    ) {
        self.init(
            queue: queue, priority: priority, runAt: Date().addingTimeInterval(delay.inSeconds),
            maxAttempts: maxAttempts, timeout: timeout, name: name, batch: batch, after: after,
            onDependencyFailure: onDependencyFailure, lane: lane)
    }
}

extension JobOptions {
    /// Whether options that a stored job template (a schedule's, a trigger's) cannot keep are
    /// set: a template's jobs take only queue, priority, maxAttempts and timeout.
    var setsMoreThanATemplateTakes: Bool {
        runAt != nil || !after.isEmpty || lane != nil || batch != nil || unique != nil || partition != nil
            || expiresAt != nil
    }
}

/// A job to enqueue: an executor name, its JSON payload and its options.
///
/// Build one from a typed executor input, or from raw JSON text (what the CLI does):
///
/// ```swift
/// let typed = try JobRequest(Sum.self, .init(a: 1, b: 2))
/// let raw = try JobRequest(executor: "sum", payloadJSON: #"{"a":1,"b":2}"#)
/// try await queue.enqueue(contentsOf: [typed, raw])
/// ```
public struct JobRequest: Sendable, Hashable {
    public var executor: String
    /// Valid JSON text (stored minified).
    public private(set) var payloadJSON: String
    public var options: JobOptions
    /// The enqueuer's trace context (a JSON object of the tracing instrument's carrier), set
    /// by ``JobQueue`` at enqueue from the task's `ServiceContext`.
    package var traceContextJSON: String?

    /// The largest payload accepted, in bytes of JSON text.
    public static let maximumPayloadBytes = 1 << 20

    /// A request from raw JSON text. The text is validated here and minified when stored.
    public init(executor: String, payloadJSON: String, options: JobOptions = .init()) throws(JobQueueError) {
        try Self.checkPayloadSize(payloadJSON.utf8.count)
        self.executor = executor
        try JSONText.validate(payloadJSON, what: "payload for '\(executor)'")
        self.payloadJSON = try PayloadMembers.checked(payloadJSON, what: "payload for '\(executor)'")
        self.options = options
    }

    /// A request whose payload jobq just encoded itself, so it needs no second parse.
    init(executor: String, encodedPayload data: Data, options: JobOptions) throws(JobQueueError) {
        try Self.checkPayloadSize(data.count)
        self.executor = executor
        self.payloadJSON = String(decoding: data, as: UTF8.self)
        self.options = options
    }

    /// A request for a typed executor; the input is encoded as JSON.
    public init<E: Executor>(_ executor: E.Type, _ input: E.Input, options: JobOptions = .init()) throws(JobQueueError)
    {
        var options = options
        if options.timeout == nil { options.timeout = E.timeout }
        if options.givenMaxAttempts == nil, let attempts = E.retryPolicy?.maxAttempts { options.maxAttempts = attempts }
        let data: Data
        do {
            data = try JSONEncoder.jobq.encode(input)
        } catch {
            throw .invalidInput("cannot encode the input of '\(E.name)' as JSON: \(error)")
        }
        try Self.checkPayloadSize(data.count)
        let payloadJSON = String(decoding: data, as: UTF8.self)
        try StoredText.checkJSON(payloadJSON, what: "the input of '\(E.name)'")
        self.executor = E.name
        self.payloadJSON = payloadJSON
        self.options = options
    }

    private static func checkPayloadSize(_ bytes: Int) throws(JobQueueError) {
        guard bytes <= maximumPayloadBytes else {
            throw .invalidInput(
                "payload is \(bytes) bytes, over the limit of \(maximumPayloadBytes) bytes (1 MiB); "
                    + "store large data elsewhere and pass a reference (a path or a key) in the payload")
        }
    }

    /// Checks what the store would refuse, so that a bad request in a batch names itself.
    package func validate() throws(JobQueueError) {
        try Label.check(executor, what: "executor name")
        try Label.check(options.queue, what: "queue name")
        guard options.maxAttempts >= 1 else {
            throw .invalidInput("maxAttempts must be at least 1, got \(options.maxAttempts)")
        }
        guard options.maxAttempts <= 1000 else {
            throw .invalidInput("maxAttempts must be at most 1000, got \(options.maxAttempts)")
        }
        if let timeout = options.timeout { try DurationParser.checkStorable(timeout, what: "timeout") }
        guard JobOptions.priorityRange.contains(options.priority) else {
            throw .invalidInput(
                "priority \(options.priority) is out of range: a priority is from \(JobOptions.priorityRange.lowerBound) "
                    + "to \(JobOptions.priorityRange.upperBound) (a 32-bit integer); higher runs first")
        }
        if let name = options.name { try Label.check(name, what: "a job's name") }
        if let batch = options.batch { try Label.check(batch, what: "a batch name") }
        if let lane = options.lane { try Label.check(lane, what: "lane name") }
        if let partition = options.partition {
            try Label.check(partition, what: "a partition", hint: "; leave it out for none")
        }
        try options.unique?.validate()
        // Only against the run time: "now" moves while an enqueue waits for the store, and a
        // deadline that passes meanwhile is not the caller's mistake (the job just expires).
        if let deadline = options.expiresAt, let runAt = options.runAt, deadline <= runAt {
            throw .invalidInput(
                "the job would expire (expiresAt \(ISO8601.string(deadline))) before it may start "
                    + "(runAt \(ISO8601.string(runAt))); give a later expiresAt, or none")
        }
        if options.after.count > 10_000 {
            throw .invalidInput(
                "a job may depend on at most 10000 jobs, got \(options.after.count); use a workflow or a batch")
        }
        if let stray = options.dependencyPolicies.keys.sorted().first(where: { !options.after.contains($0) }) {
            throw .invalidInput("a dependency policy is given for job \(stray), which is not in `after`")
        }
    }
}

extension JSONEncoder {
    /// The encoder jobq uses for payloads and results: compact, keys sorted, slashes unescaped.
    /// Shared: encoders are thread-safe, and making one per job shows up in profiles.
    package static let jobq: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes, .sortedKeys]
        return encoder
    }()
}

extension JSONDecoder {
    /// The decoder for payloads and checkpoints, shared like ``JSONEncoder/jobq``.
    package static let jobq = JSONDecoder()
}
