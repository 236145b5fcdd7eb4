import Foundation

extension Job {
    /// The columns ``init(_:)`` reads, in the order a query selects them.
    package enum Column: Int32, SQLColumns {
        case id, queue, executor, state, priority, payload, result, error, attempt, maxAttempts, runAt, timeout
        case createdAt, startedAt, finishedAt, progress, progressMessage, updateData, checkpoint, snoozes, name, batch
        case workflowID, groupID, lane, unmet, failedDependencies, treeNode, schedule, occurrence, uniqueKey
        case partitionKey, expiresAt
    }

    /// The columns ``init(_:)`` reads, in a form to paste into a SELECT or RETURNING.
    package static let columns = Column.list

    /// How many columns ``columns`` names: the index of the first column a query selects after them.
    package static let columnCount = Column.count

    /// A job as a fresh insert of only its own columns leaves it (no attempt, result, batch,
    /// workflow, lane, dependency, schedule, unique key, partition or expiry): what an enqueue
    /// of a self-contained job returns without reading the row back.
    package init(
        inserted id: JobID, queue: String, executor: String, state: JobState, priority: Int, payloadJSON: String,
        maxAttempts: Int, runAt: Double, timeout: Double?, createdAt: Double, name: String?
    ) {
        self.id = id
        self.queue = queue
        self.executor = executor
        self.state = state
        self.priority = priority
        self.payloadJSON = payloadJSON
        resultJSON = nil
        error = nil
        attempt = 0
        self.maxAttempts = maxAttempts
        self.runAt = Date(timeIntervalSince1970: runAt)
        self.timeout = timeout.map(Duration.init(storedSeconds:))
        self.createdAt = Date(timeIntervalSince1970: createdAt)
        startedAt = nil
        finishedAt = nil
        progress = nil
        progressMessage = nil
        updateJSON = nil
        checkpointJSON = nil
        snoozes = 0
        self.name = name
        batch = nil
        workflowID = nil
        groupID = nil
        lane = nil
        unmetDependencies = 0
        failedDependenciesJSON = nil
        treeNode = nil
        schedule = nil
        occurrence = nil
        uniqueKey = nil
        partition = nil
        expiresAt = nil
    }

    /// Reads a row selected with ``columns``, in that order (a GRDB row or a stepped statement).
    package init(_ row: some ColumnReader) {
        typealias C = Column
        id = row.int64(C.id)
        queue = row.string(C.queue)
        executor = row.string(C.executor)
        state = JobState(rawValue: row.string(C.state)) ?? .dead
        priority = row.int(C.priority)
        payloadJSON = row.string(C.payload)
        resultJSON = row.optionalString(C.result)
        error = row.optionalString(C.error)
        attempt = row.int(C.attempt)
        maxAttempts = row.int(C.maxAttempts)
        runAt = Date(timeIntervalSince1970: row.double(C.runAt))
        timeout = row.optionalDouble(C.timeout).map(Duration.init(storedSeconds:))
        createdAt = Date(timeIntervalSince1970: row.double(C.createdAt))
        startedAt = row.optionalDouble(C.startedAt).map(Date.init(timeIntervalSince1970:))
        finishedAt = row.optionalDouble(C.finishedAt).map(Date.init(timeIntervalSince1970:))
        progress = row.optionalDouble(C.progress)
        progressMessage = row.optionalString(C.progressMessage)
        updateJSON = row.optionalString(C.updateData)
        checkpointJSON = row.optionalString(C.checkpoint)
        snoozes = row.int(C.snoozes)
        name = row.optionalString(C.name)
        batch = row.optionalString(C.batch)
        workflowID = row.optionalInt64(C.workflowID)
        groupID = row.optionalInt64(C.groupID)
        lane = row.optionalString(C.lane)
        unmetDependencies = row.int(C.unmet)
        failedDependenciesJSON = row.optionalString(C.failedDependencies)
        treeNode = row.optionalInt64(C.treeNode)
        schedule = row.optionalString(C.schedule)
        occurrence = row.optionalDouble(C.occurrence).map(Date.init(timeIntervalSince1970:))
        uniqueKey = row.optionalString(C.uniqueKey)
        partition = row.optionalString(C.partitionKey)
        expiresAt = row.optionalDouble(C.expiresAt).map(Date.init(timeIntervalSince1970:))
    }
}
