import Foundation
import JobQCore

extension SQLStore {
    package func jobs(where filter: JobFilter, page: JobPage) async throws -> [Job] {
        let now = StoreSQL.now()
        return try await read { db in
            let (sql, arguments) = Self.pageSQL(Job.columns, filter, page, db.dialect, now: now)
            return try db.fetchRowsOnce(sql: sql, arguments: arguments).map { Job($0) }
        }
    }

    package func jobIDs(where filter: JobFilter, page: JobPage) async throws -> [JobID] {
        let now = StoreSQL.now()
        return try await read { db in
            let (sql, arguments) = Self.pageSQL("id", filter, page, db.dialect, now: now)
            return try db.fetchRowsOnce(sql: sql, arguments: arguments).compactMap {
                $0.values.first.flatMap(Int64.from)
            }
        }
    }

    private static func pageSQL(_ columns: String, _ filter: JobFilter, _ page: JobPage, _ d: SQLDialect, now: Double)
        -> (String, SQLArguments)
    {
        var (condition, arguments) = FilterSQL.condition(filter, d, now: now)
        for (bound, op) in [(page.after, ">"), (page.before, "<"), (page.through, "<=")] {
            guard let bound else { continue }
            condition += " AND id \(op) ?"
            arguments.append(bound)
        }
        arguments.append(page.limit)
        let sql = """
            SELECT \(columns) FROM jobq_jobs WHERE \(condition)
            ORDER BY id \(page.newestFirst ? "DESC" : "") LIMIT ?
            """
        return (sql, arguments)
    }

    package func countJobs(where filter: JobFilter) async throws -> Int {
        let now = StoreSQL.now()
        return try await read { db in
            let (condition, arguments) = FilterSQL.condition(filter, db.dialect, now: now)
            let rows = try db.fetchRowsOnce(
                sql: "SELECT COUNT(*) FROM jobq_jobs WHERE \(condition)", arguments: arguments)
            return rows.first?.values.first.flatMap(Int.from) ?? 0
        }
    }

    package func delete(_ id: JobID) async throws {
        let now = StoreSQL.now()
        try await write { db in try StoreSQL.delete(try StoreSQL.existingJob(db, id), db, now: now).orThrow() }
    }

    package func throughput(of queues: [String], since start: Date, interval: Double, buckets: Int) async throws
        -> [QueueThroughput]
    {
        try await finished(
            of: queues, in: [.succeeded, .dead, .cancelled], since: start, interval: interval, buckets: buckets)
    }

    /// Jobs of each queue that finished in `states`, per interval (the other final states'
    /// series are zeros): ``throughput(of:since:interval:buckets:)``, and the history's
    /// cancellations alone, which then reads no succeeded job's entry.
    package func finished(
        of queues: [String], in states: [JobState], since start: Date, interval: Double, buckets: Int
    ) async throws -> [QueueThroughput] {
        let from = start.timeIntervalSince1970
        return try await read { db in
            // One range of jobs_finished (queue, state, finished_at) per queue and final state:
            // only the window's jobs are read, however long the history. PostgreSQL's CAST
            // rounds where SQLite's truncates: FLOOR first there.
            typealias P = StoreSQL.Throughput
            let offset = "(finished_at - \(P.from)) / \(P.interval)"
            let bucket = db.dialect == .postgres ? "CAST(FLOOR(\(offset)) AS INTEGER)" : "CAST(\(offset) AS INTEGER)"
            let count = try db.statement(
                sql: """
                    SELECT \(bucket) AS bucket, COUNT(*) AS n
                    FROM jobq_jobs \(db.dialect.indexedBy("jobq_jobs_finished"))
                    WHERE queue = \(P.queue) AND state = \(P.state) AND finished_at IS NOT NULL AND finished_at >= \(P.from)
                    GROUP BY bucket
                    """)
            return try Set(queues).sorted().map { queue in
                var series: [JobState: [Int]] = [:]
                for state in [JobState.succeeded, .dead, .cancelled] {
                    var values = Array(repeating: 0, count: buckets)
                    guard states.contains(state) else {
                        series[state] = values
                        continue
                    }
                    count.bind(P.from, from)
                    count.bind(P.interval, interval)
                    count.bind(P.queue, queue)
                    count.bind(P.state, state.rawValue)
                    while try count.step() {
                        let bucket = min(max(count.int(0), 0), buckets - 1)
                        values[bucket] += count.int(1)
                    }
                    count.reset()
                    series[state] = values
                }
                return QueueThroughput(
                    queue: queue, succeeded: series[.succeeded]!, dead: series[.dead]!, cancelled: series[.cancelled]!)
            }
        }
    }

    package func batches(limit: Int) async throws -> [BatchStatus] {
        try await read { db in
            try db.fetchRows(
                sql: "SELECT \(StoreSQL.batchColumns) FROM jobq_batches ORDER BY created_at DESC, name LIMIT ?",
                arguments: [limit]
            )
            .map(StoreSQL.batchStatus)
        }
    }
}

extension StoreSQL {
    /// The parameters of a queue's finished jobs of one state counted in buckets of time.
    enum Throughput: Int32, SQLParameter {
        case from = 1
        case interval, queue, state
    }
}
