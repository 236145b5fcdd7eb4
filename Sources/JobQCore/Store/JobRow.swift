import Foundation

extension Job {
    /// The columns ``init(_:)`` reads, in a form to paste into a SELECT or RETURNING.
    package static let columns = """
        id, queue, executor, state, priority, payload, result, error, attempt, max_attempts,
        run_at, timeout, created_at, started_at, finished_at, progress, progress_message, update_data,
        checkpoint, snoozes, name, batch, workflow_id, group_id, lane, unmet, failed_dependencies, tree_node, schedule, occurrence,
        unique_key, partition_key
        """

    /// How many columns ``columns`` names: the index of the first column a query selects after them.
    package static let columnCount: Int32 = 32

    /// Reads a row selected with ``columns``, in that order (a GRDB row or a stepped statement).
    package init(_ row: some ColumnReader) {
        id = row.int64(0)
        queue = row.string(1)
        executor = row.string(2)
        state = JobState(rawValue: row.string(3)) ?? .dead
        priority = row.int(4)
        payloadJSON = row.string(5)
        resultJSON = row.optionalString(6)
        error = row.optionalString(7)
        attempt = row.int(8)
        maxAttempts = row.int(9)
        runAt = Date(timeIntervalSince1970: row.double(10))
        timeout = row.optionalDouble(11).map(Duration.init(storedSeconds:))
        createdAt = Date(timeIntervalSince1970: row.double(12))
        startedAt = row.optionalDouble(13).map(Date.init(timeIntervalSince1970:))
        finishedAt = row.optionalDouble(14).map(Date.init(timeIntervalSince1970:))
        progress = row.optionalDouble(15)
        progressMessage = row.optionalString(16)
        updateJSON = row.optionalString(17)
        checkpointJSON = row.optionalString(18)
        snoozes = row.int(19)
        name = row.optionalString(20)
        batch = row.optionalString(21)
        workflowID = row.optionalInt64(22)
        groupID = row.optionalInt64(23)
        lane = row.optionalString(24)
        unmetDependencies = row.int(25)
        failedDependenciesJSON = row.optionalString(26)
        treeNode = row.optionalInt64(27)
        schedule = row.optionalString(28)
        occurrence = row.optionalDouble(29).map(Date.init(timeIntervalSince1970:))
        uniqueKey = row.optionalString(30)
        partition = row.optionalString(31)
    }
}
