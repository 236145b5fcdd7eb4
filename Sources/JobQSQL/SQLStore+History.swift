import Foundation
import JobQCore

/// The history of outcomes, times and backlog (jobq_history, jobq_backlog_history): workers add
/// their minutes, one worker samples the backlog each minute, and ``history(from:bucketSeconds:buckets:queue:executor:)``
/// reads a window of them, bucket by bucket, by the primary keys' ranges.
extension SQLStore {
    package func addHistory(_ minutes: [HistoryMinute]) async throws {
        guard !minutes.isEmpty else { return }
        try await write(.short, audience: .nobody, lock: .shared) { db in
            let forUpdate = db.dialect == .postgres ? " FOR UPDATE" : ""
            // In one order for every worker: two workers adding the same rows in different
            // orders (a recorder's minutes come out of a dictionary) each held a row the other
            // wanted, and PostgreSQL ended one addition as a deadlock.
            let ordered = minutes.sorted { ($0.minute, $0.queue, $0.executor) < ($1.minute, $1.queue, $1.executor) }
            for minute in ordered {
                // The row first (so that two workers' additions meet on it), then read under
                // its lock and written back merged: histograms add element by element.
                try db.execute(
                    sql: """
                        INSERT INTO jobq_history (minute, queue, executor) VALUES (?, ?, ?) ON CONFLICT DO NOTHING
                        """, arguments: [minute.minute, minute.queue, minute.executor])
                let row = try db.fetchRows(
                    sql: """
                        SELECT succeeded, retried, dead, waits, runs, wait_max, run_max FROM jobq_history
                        WHERE minute = ? AND queue = ? AND executor = ?\(forUpdate)
                        """, arguments: [minute.minute, minute.queue, minute.executor])[0]
                var merged = Self.historyMinute(
                    row, minute: minute.minute, queue: minute.queue, executor: minute.executor)
                merged.merge(minute)
                try db.execute(
                    sql: """
                        UPDATE jobq_history SET succeeded = ?, retried = ?, dead = ?, waits = ?, runs = ?, wait_max = ?,
                            run_max = ?
                        WHERE minute = ? AND queue = ? AND executor = ?
                        """,
                    arguments: [
                        merged.succeeded, merged.retried, merged.dead, merged.waits.json, merged.runs.json,
                        merged.waitMax, merged.runMax, minute.minute, minute.queue, minute.executor
                    ])
            }
        }
    }

    /// Counts the unfinished jobs by queue and state into the minute's backlog sample (a
    /// second sample of the same minute replaces the first). A retry waiting for its time
    /// counts as scheduled.
    package func sampleBacklog(minute: Int64) async throws {
        try await write(.long, audience: .nobody, lock: .shared) { db in
            try db.execute(sql: "DELETE FROM jobq_backlog_history WHERE minute = ?", arguments: [minute])
            try db.execute(
                sql: """
                    INSERT INTO jobq_backlog_history (minute, queue, state, jobs)
                    SELECT ?, queue, CASE state WHEN 'failed' THEN 'scheduled' ELSE state END AS sampled, SUM(n)
                    FROM (\(StoreSQL.unfinishedCountsSQL[db.dialect])) AS counts
                    GROUP BY queue, sampled HAVING SUM(n) > 0
                    """, arguments: [minute])
        }
    }

    package func cleanHistory(beforeMinute minute: Int64) async throws {
        try await write(.long, audience: .nobody, lock: .shared) { db in
            try db.execute(sql: "DELETE FROM jobq_history WHERE minute < ?", arguments: [minute])
            try db.execute(sql: "DELETE FROM jobq_backlog_history WHERE minute < ?", arguments: [minute])
        }
    }

    package func history(
        from start: Date, bucketSeconds: Double, buckets count: Int, queue: String?, executor: String?
    ) async throws -> History {
        let from = start.timeIntervalSince1970
        let firstMinute = Int64((from / 60).rounded(.down))
        let lastMinute = Int64(((from + bucketSeconds * Double(count)) / 60).rounded(.up))
        @Sendable func bucket(ofMinute minute: Int64) -> Int? {
            let index = Int(((Double(minute) * 60 - from) / bucketSeconds).rounded(.down))
            return (0..<count).contains(index) ? index : nil
        }
        var buckets = (0..<count).map {
            History.Bucket(start: Date(timeIntervalSince1970: from + Double($0) * bucketSeconds))
        }
        let stored = try await read { [buckets] db -> (buckets: [History.Bucket], queues: [String]) in
            var buckets = buckets
            var waits = Array(repeating: LatencyHistogram(), count: count)
            var runs = Array(repeating: LatencyHistogram(), count: count)
            var conditions = ["minute >= ?", "minute < ?"]
            var arguments: SQLArguments = [firstMinute, lastMinute]
            if let queue {
                conditions.append("queue = ?")
                arguments.append(queue)
            }
            if let executor {
                conditions.append("executor = ?")
                arguments.append(executor)
            }
            // Stepped through, not fetched as rows: a day of minutes is tens of thousands.
            let minutes = try db.statement(
                sql: """
                    SELECT minute, succeeded, retried, dead, waits, runs, wait_max, run_max
                    FROM jobq_history WHERE \(conditions.joined(separator: " AND "))
                    """)
            minutes.bind(arguments)
            while try minutes.step() {
                guard let index = bucket(ofMinute: minutes.int64(0)) else { continue }
                buckets[index].succeeded += minutes.int(1)
                buckets[index].retried += minutes.int(2)
                buckets[index].dead += minutes.int(3)
                if waits[index].add(json: minutes.string(4)) {
                    buckets[index].waitMax = max(buckets[index].waitMax ?? 0, minutes.double(6))
                }
                if runs[index].add(json: minutes.string(5)) {
                    buckets[index].runMax = max(buckets[index].runMax ?? 0, minutes.double(7))
                }
            }
            minutes.reset()
            for index in 0..<count {
                buckets[index].waitP50 = waits[index].percentile(0.5)
                buckets[index].waitP95 = waits[index].percentile(0.95)
                buckets[index].runP50 = runs[index].percentile(0.5)
                buckets[index].runP95 = runs[index].percentile(0.95)
            }
            // The backlog is kept by queue: a history of one executor draws none. Each bucket
            // shows its last sample, summed over the queues.
            if executor == nil {
                var sampleConditions = ["minute >= ?", "minute < ?"]
                var sampleArguments: SQLArguments = [firstMinute, lastMinute]
                if let queue {
                    sampleConditions.append("queue = ?")
                    sampleArguments.append(queue)
                }
                var samples: [(minute: Int64, state: String, jobs: Int)] = []
                var lastSample: [Int: Int64] = [:]
                for row in try db.fetchRows(
                    sql: """
                        SELECT minute, state, SUM(jobs) FROM jobq_backlog_history
                        WHERE \(sampleConditions.joined(separator: " AND ")) GROUP BY minute, state
                        """, arguments: sampleArguments)
                {
                    let minute = row.int64(0)
                    guard let index = bucket(ofMinute: minute) else { continue }
                    lastSample[index] = max(lastSample[index] ?? minute, minute)
                    samples.append((minute, row.string(1), row.int(2)))
                }
                for sample in samples {
                    guard let index = bucket(ofMinute: sample.minute), lastSample[index] == sample.minute,
                        let state = JobState(rawValue: sample.state)
                    else { continue }
                    buckets[index].backlog[state, default: 0] += sample.jobs
                }
            }
            // Every queue with finished jobs, for their cancellations (a cancelled job is a
            // finished one): a loose scan of the finished-jobs index, one probe per queue
            // however many jobs each holds.
            var queues = Set<String>()
            if executor == nil, queue == nil {
                queues.formUnion(
                    try db.fetchAll(
                        String.self,
                        sql: """
                            WITH RECURSIVE finished_queues(name) AS (
                                SELECT (SELECT MIN(queue) FROM jobq_jobs WHERE finished_at IS NOT NULL)
                                UNION ALL
                                SELECT (SELECT MIN(queue) FROM jobq_jobs WHERE finished_at IS NOT NULL AND queue > finished_queues.name)
                                FROM finished_queues WHERE finished_queues.name IS NOT NULL
                            )
                            SELECT name FROM finished_queues WHERE name IS NOT NULL
                            """))
            }
            return (buckets, queues.sorted())
        }
        buckets = stored.buckets
        // Cancellations (expiries too) from the jobs kept, by their queue's finished-jobs index;
        // the workers' minutes do not see them. Not by executor: the index has none.
        if executor == nil {
            let queues = queue.map { [$0] } ?? stored.queues
            for series in try await finished(
                of: queues, in: [.cancelled], since: start, interval: bucketSeconds, buckets: count)
            {
                for (index, cancelled) in series.cancelled.enumerated() { buckets[index].cancelled += cancelled }
            }
        }
        return History(start: start, bucketSeconds: bucketSeconds, buckets: buckets, queue: queue, executor: executor)
    }

    private static func historyMinute(
        _ row: SQLRow, offset: Int32 = 0, minute: Int64, queue: String, executor: String
    ) -> HistoryMinute {
        var stored = HistoryMinute(minute: minute, queue: queue, executor: executor)
        stored.succeeded = row.int(offset)
        stored.retried = row.int(offset + 1)
        stored.dead = row.int(offset + 2)
        stored.waits = LatencyHistogram(json: row.string(offset + 3))
        stored.runs = LatencyHistogram(json: row.string(offset + 4))
        stored.waitMax = row.double(offset + 5)
        stored.runMax = row.double(offset + 6)
        return stored
    }
}
