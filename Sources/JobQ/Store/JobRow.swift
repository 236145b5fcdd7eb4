import Foundation
import GRDB

extension Job {
    /// The columns ``init(row:)`` reads, in a form to paste into a SELECT or RETURNING.
    static let columns = """
        id, queue, executor, state, priority, payload, result, error, attempt, max_attempts,
        run_at, timeout, created_at, started_at, finished_at, progress, progress_message, update_data,
        checkpoint, snoozes, name, batch
        """

    init(row: Row) {
        id = row["id"]
        queue = row["queue"]
        executor = row["executor"]
        state = JobState(rawValue: row["state"]) ?? .dead
        priority = row["priority"]
        payloadJSON = row["payload"]
        resultJSON = row["result"]
        error = row["error"]
        attempt = row["attempt"]
        maxAttempts = row["max_attempts"]
        runAt = Date(timeIntervalSince1970: row["run_at"])
        timeout = (row["timeout"] as Double?).map(Duration.init(storedSeconds:))
        createdAt = Date(timeIntervalSince1970: row["created_at"])
        startedAt = (row["started_at"] as Double?).map(Date.init(timeIntervalSince1970:))
        finishedAt = (row["finished_at"] as Double?).map(Date.init(timeIntervalSince1970:))
        progress = row["progress"]
        progressMessage = row["progress_message"]
        updateJSON = row["update_data"]
        checkpointJSON = row["checkpoint"]
        snoozes = row["snoozes"]
        name = row["name"]
        batch = row["batch"]
    }
}
