import Foundation
import GRDB

extension Job {
    /// The columns ``init(_:)`` reads, in a form to paste into a SELECT or RETURNING.
    static let columns = """
        id, queue, executor, state, priority, payload, result, error, attempt, max_attempts,
        run_at, timeout, created_at, started_at, finished_at, progress, progress_message, update_data,
        checkpoint, snoozes, name, batch
        """

    /// Reads the row a statement selected with ``columns``, in that order.
    init(_ statement: some ColumnReader) {
        id = statement.int64(0)
        queue = statement.string(1)
        executor = statement.string(2)
        state = JobState(rawValue: statement.string(3)) ?? .dead
        priority = statement.int(4)
        payloadJSON = statement.string(5)
        resultJSON = statement.optionalString(6)
        error = statement.optionalString(7)
        attempt = statement.int(8)
        maxAttempts = statement.int(9)
        runAt = Date(timeIntervalSince1970: statement.double(10))
        timeout = statement.optionalDouble(11).map(Duration.init(storedSeconds:))
        createdAt = Date(timeIntervalSince1970: statement.double(12))
        startedAt = statement.optionalDouble(13).map(Date.init(timeIntervalSince1970:))
        finishedAt = statement.optionalDouble(14).map(Date.init(timeIntervalSince1970:))
        progress = statement.optionalDouble(15)
        progressMessage = statement.optionalString(16)
        updateJSON = statement.optionalString(17)
        checkpointJSON = statement.optionalString(18)
        snoozes = statement.int(19)
        name = statement.optionalString(20)
        batch = statement.optionalString(21)
    }
}
