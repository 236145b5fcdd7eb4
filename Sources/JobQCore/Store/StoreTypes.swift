import Foundation

/// What an idle worker learns from one read: whether a claim would find a job now, and when
/// the next scheduled or retrying job on its queues falls due (seconds since 1970).
package struct ClaimOutlook: Sendable, Hashable {
    package var claimable: Bool
    package var nextDue: Double?

    package init(claimable: Bool, nextDue: Double? = nil) {
        self.claimable = claimable
        self.nextDue = nextDue
    }
}

/// A job a worker has claimed: what it needs to run the attempt, and the fence it must present
/// to record the outcome (`id`, `attempt` and the worker's token).
///
/// What the claim read is kept once, behind a reference (``Read``): a claimed job is handed from
/// the claim to the pool's buffer, a slot, the completion batcher and its report (arrays and
/// dictionaries all along), and copying twenty fields with a dozen strings cost a retain per
/// string and a 250-byte move each time; a copy now retains one box.
package struct ClaimedJob: Sendable, Hashable {
    /// The job's row as the claim read it.
    private struct Read: Sendable, Hashable {
        let id: JobID
        let queue: String
        let executor: String
        let payloadJSON: String
        let priority: Int
        let attempt: Int
        let maxAttempts: Int
        let runAt: Double
        let timeout: Duration?
        let name: String?
        let batch: String?
        let checkpointJSON: String?
        let snoozes: Int
        let workflowID: WorkflowID?
        let groupID: Int64?
        let lane: String?
        let failedDependenciesJSON: String?
        let treeNode: Int64?
        let traceContextJSON: String?
        let isSuspect: Bool
    }

    private final class Box: Sendable {
        let read: Read
        init(_ read: Read) { self.read = read }
    }

    private let box: Box

    package var id: JobID { box.read.id }
    package var queue: String { box.read.queue }
    package var executor: String { box.read.executor }
    package var payloadJSON: String { box.read.payloadJSON }
    package var priority: Int { box.read.priority }
    package var attempt: Int { box.read.attempt }
    package var maxAttempts: Int { box.read.maxAttempts }
    package var runAt: Double { box.read.runAt }
    package var timeout: Duration? { box.read.timeout }
    package var name: String? { box.read.name }
    package var batch: String? { box.read.batch }
    /// The state a re-entrant executor asked to continue from.
    package var checkpointJSON: String? { box.read.checkpointJSON }
    package var snoozes: Int { box.read.snoozes }
    package var workflowID: WorkflowID? { box.read.workflowID }
    /// The innermost workflow group the job belongs to.
    package var groupID: Int64? { box.read.groupID }
    package var lane: String? { box.read.lane }
    /// Dependencies that failed and that this job ignored or ran despite, as a JSON array.
    package var failedDependenciesJSON: String? { box.read.failedDependenciesJSON }
    /// The job tree node it is a job of.
    package var treeNode: Int64? { box.read.treeNode }
    /// The enqueuer's trace context (JSON object), which the attempt's span continues.
    package var traceContextJSON: String? { box.read.traceContextJSON }
    /// Whether a worker once died holding it, possibly started but with no start mark: such a
    /// job's start is committed before it runs (see ``Store/reclaimExpiredLeases()``).
    package var isSuspect: Bool { box.read.isSuspect }
    /// The workflow's shared context when the job was claimed (set by the claim).
    package var sharedJSON: String?
    /// Whether the claim recorded the attempt's start (a job handed to a free slot at once);
    /// otherwise the worker records it, durably, just before the job runs.
    package var startRecorded = false
    /// When the worker started the attempt (its start mark is written later, with its time).
    package var startTime: Double?

    package static func == (lhs: ClaimedJob, rhs: ClaimedJob) -> Bool {
        (lhs.box === rhs.box || lhs.box.read == rhs.box.read) && lhs.sharedJSON == rhs.sharedJSON
            && lhs.startRecorded == rhs.startRecorded && lhs.startTime == rhs.startTime
    }

    package func hash(into hasher: inout Hasher) {
        hasher.combine(box.read)
        hasher.combine(sharedJSON)
        hasher.combine(startRecorded)
        hasher.combine(startTime)
    }

    /// The columns ``init(_:)`` reads, in the order a query selects them.
    package enum Column: Int32, SQLColumns {
        case id, queue, executor, payload, priority, attempt, maxAttempts, runAt, timeout, name, batch, checkpoint
        case snoozes, workflowID, groupID, lane, failedDependencies, treeNode, traceContext, unstartedDeliveries
    }

    package static let columns = columns(attempt: "attempt")
    /// How many columns ``columns`` names: the index of the first column a query selects after them.
    package static let columnCount = Column.count

    /// ``columns`` with `attempt` read as the expression given (a claim that reads before it
    /// updates reads `attempt + 1`).
    package static func columns(attempt: String) -> String {
        zip(Column.allCases, columnNames).map { $0 == .attempt ? attempt : $1 }.joined(separator: ", ")
    }

    private static let columnNames = Column.allCases.map(\.name)

    /// Reads a row selected with ``columns``, in that order (a GRDB row, a stepped statement, or
    /// a PostgreSQL row).
    package init(_ row: some ColumnReader) {
        typealias C = Column
        box = Box(
            Read(
                id: row.int64(C.id), queue: row.string(C.queue), executor: row.string(C.executor),
                payloadJSON: row.string(C.payload), priority: row.int(C.priority), attempt: row.int(C.attempt),
                maxAttempts: row.int(C.maxAttempts), runAt: row.double(C.runAt),
                timeout: row.optionalDouble(C.timeout).map(Duration.init(storedSeconds:)),
                name: row.optionalString(C.name), batch: row.optionalString(C.batch),
                checkpointJSON: row.optionalString(C.checkpoint), snoozes: row.int(C.snoozes),
                workflowID: row.optionalInt64(C.workflowID), groupID: row.optionalInt64(C.groupID),
                lane: row.optionalString(C.lane), failedDependenciesJSON: row.optionalString(C.failedDependencies),
                treeNode: row.optionalInt64(C.treeNode), traceContextJSON: row.optionalString(C.traceContext),
                isSuspect: row.int(C.unstartedDeliveries) > 0))
    }

    /// Whether finishing it matters beyond its own row: a batch, a workflow group, a lane.
    package var isMember: Bool { batch != nil || groupID != nil || lane != nil }

    /// Whether a claim takes it before `other` (`StoreSQL.claimOrder` in JobQSQL, in Swift): for rows
    /// that come back in no particular order.
    package func claimsBefore(_ other: ClaimedJob) -> Bool {
        (priority, -runAt, -id) > (other.priority, -other.runAt, -other.id)
    }
}

/// How an attempt ended, as the store records it.
package enum AttemptOutcome: Sendable {
    /// Succeeded with this JSON result, and these writes to the workflow's shared context
    /// (key, JSON text), committed with the success.
    case succeeded(resultJSON: String, sharedWrites: [SharedWrite] = [])
    /// Failed (or timed out); retry at the given time.
    case retry(error: String, at: Date, timedOut: Bool)
    /// Failed for good.
    case dead(error: String, timedOut: Bool)
    /// Not finished (the worker is shutting down): back to `ready`, the attempt not counted.
    case released
    /// The executor asked to run again at `until`, optionally from a checkpoint; the attempt
    /// is not counted.
    case snoozed(until: Date, checkpointJSON: String?)
    /// A durable function gave its slot back until `until` (a sleep, or a wait's deadline),
    /// waiting for the signal `awaiting` if any; neither the attempt nor a snooze is counted.
    case parked(until: Date, awaiting: String?)
    /// A durable function whose cancelling was asked for ran its compensation: the job ends
    /// `cancelled`, with `reason`.
    case cancelled(reason: String)

    package var isSuccess: Bool {
        if case .succeeded = self { true } else { false }
    }
}

/// What `jobq status` shows for one queue.
public struct QueueStatus: Sendable, Hashable, Codable {
    public var name: String
    public var paused: Bool
    /// When the queue was paused (nil when it is not, or was paused by a jobq before 0.17's
    /// schema, which did not keep the time).
    public var pausedSince: Date?
    /// What the queue allows across every worker (``JobQueue/setLimits(_:for:)``); no limits
    /// when never set.
    public var limits: QueueLimits = QueueLimits()
    /// Jobs per state; states with no jobs are present with 0.
    public var counts: [String: Int]

    package init(name: String, paused: Bool, limits: QueueLimits = QueueLimits(), counts: [String: Int]) {
        self.name = name
        self.paused = paused
        self.limits = limits
        self.counts = counts
    }
}

/// A worker pool that heartbeated recently.
public struct WorkerStatus: Sendable, Hashable, Codable {
    public var id: String
    public var host: String
    public var pid: Int
    public var queues: [String]
    public var concurrency: Int
    public var startedAt: Date
    public var heartbeatAt: Date

    package init(
        id: String, host: String, pid: Int, queues: [String], concurrency: Int, startedAt: Date, heartbeatAt: Date
    ) {
        self.id = id
        self.host = host
        self.pid = pid
        self.queues = queues
        self.concurrency = concurrency
        self.startedAt = startedAt
        self.heartbeatAt = heartbeatAt
    }
}

/// A snapshot of a store: every queue's counts and the live workers.
public struct StoreStatus: Sendable, Hashable, Codable {
    public var queues: [QueueStatus]
    public var workers: [WorkerStatus]
    public var schemaVersion: Int
    /// Workflows not finished yet.
    public var runningWorkflows: Int
    /// Executors whose jobs no worker claims, in any queue (``JobQueue/pause(executor:)``).
    public var pausedExecutors: [PausedExecutor]
    /// When the whole store was paused (``JobQueue/pauseAll()``); nil when it is not.
    public var allPausedSince: Date?

    package init(
        queues: [QueueStatus], workers: [WorkerStatus], pausedExecutors: [PausedExecutor] = [],
        allPausedSince: Date? = nil, schemaVersion: Int, runningWorkflows: Int
    ) {
        self.queues = queues
        self.workers = workers
        self.pausedExecutors = pausedExecutors
        self.allPausedSince = allPausedSince
        self.schemaVersion = schemaVersion
        self.runningWorkflows = runningWorkflows
    }
}

/// How hard the store pushes writes to disk.
public enum Durability: Sendable, Hashable {
    /// `synchronous=NORMAL` in WAL mode: a committed job survives a crash of the process;
    /// the last transactions before a power loss or OS crash may roll back. The default.
    case normal
    /// `synchronous=FULL`: every commit is synced to disk before it returns, so it also
    /// survives power loss, at the cost of one fsync per transaction.
    case full
}

/// What opening a store does when its schema is older than this jobq.
public enum SchemaMigrationPolicy: Sendable, Hashable {
    /// Apply the pending migrations (after a backup of a store that holds data). The default.
    case applyPending
    /// Refuse to open, with ``JobQueueError/incompatibleStore(_:)``: for deployments that
    /// migrate as a separate step (`jobq migrate up`) before starting workers.
    case refuseIfPending
}
