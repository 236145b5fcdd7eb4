import Foundation
import JobQCore

/// What a limited queue has room for at a moment, per partition (one partition, `''`, when the
/// queue is not partitioned).
struct QueueCapacity {
    let queue: LimitedQueue
    /// Places left by partition, for the partitions that have jobs running or started in the
    /// rate's window; any other partition has ``fresh`` places.
    var left: [String: Int]
    let fresh: Int
    /// Partitions with no place left, and when the earliest of those held by the rate gets
    /// one back (nil when only running jobs hold them: places return as jobs finish).
    var full: Set<String>
    var reopensAt: Double?
    /// Starts in the rate's window by partition (empty without a rate).
    var startedInWindow: [String: Int] = [:]

    func places(_ partition: String) -> Int { left[partition] ?? fresh }

    mutating func take(_ partition: String) {
        let now = places(partition) - 1
        left[partition] = now
        if now <= 0 { full.insert(partition) }
    }
}

extension StoreSQL {

    /// The text of a job's partition under `partitioning`, from the job's own partition or the
    /// payload member at the path bound at `path` (empty when it has neither: those jobs share
    /// one partition). A constant for a queue that is not partitioned.
    static func partitionOf(_ d: SQLDialect, _ partitioning: QueuePartitioning?, path: String) -> String {
        // The path parameter appears in every form (bound to NULL where there is no path), so
        // that one argument list fits every queue's statement.
        let none = "CAST(\(path) AS TEXT)"
        return switch partitioning {
        case nil: "COALESCE(\(none), '')"
        case .jobPartition: "COALESCE(partition_key, \(none), '')"
        case .payload:
            switch d {
            case .sqlite: "COALESCE(partition_key, CAST(json_extract(payload, \(path)) AS TEXT), '')"
            case .postgres: "COALESCE(partition_key, payload #>> CAST(\(path) AS text[]), '')"
            }
        }
    }

    /// The path to bind for ``partitionOf(_:_:path:)``: a payload pointer in the dialect's form.
    static func partitionPath(_ d: SQLDialect, _ partitioning: QueuePartitioning?) -> String? {
        guard case .payload(let pointer) = partitioning, let parsed = try? PayloadPointer(pointer) else { return nil }
        return d == .sqlite ? parsed.sqlitePath : parsed.postgresPath
    }

    /// The time of a claim of a rate-limited queue: the server's clock where several machines
    /// claim (every start in a rate's window is then stamped by one clock), this process's on
    /// SQLite.
    static func clock(_ db: some SQLTransaction) throws -> Double {
        switch db.dialect {
        case .sqlite: StoreSQL.now()
        case .postgres:
            try db.fetchOne(
                Double.self, sql: "SELECT CAST(extract(epoch FROM clock_timestamp()) AS double precision)")
                ?? StoreSQL.now()
        }
    }

    /// Locks `queue`'s row where writers overlap, so that claims of a limited queue count one
    /// after the other, each after the last one's commit (a statement after the lock reads a
    /// fresh snapshot). On SQLite the claim holds the only write lock already.
    static func lockQueueRow(_ db: some SQLTransaction, _ queue: String) throws {
        _ = try db.fetchAll(String.self, sql: lockQueueRowSQL[db.dialect], arguments: [queue])
        // The bound is for this wait only: left in place, it also bounded the COMMIT, which
        // takes the notification queue's lock when the claim notifies, and a loaded server
        // refused the whole claim there (SQLSTATE 55P03 at COMMIT). Back to the session's own.
        if db.dialect == .postgres { try db.execute(sql: "SET LOCAL lock_timeout TO DEFAULT") }
    }

    /// On PostgreSQL the statement first bounds its own wait to 200 ms, in the same round trip:
    /// its CTE runs before the first row is locked (``lockQueueRow(_:_:)`` restores the
    /// session's bound after it). Claims
    /// hold this lock for milliseconds; a session that holds it longer (an operator's open
    /// transaction) fails this queue's claim, a transient error the pool backs off, instead of
    /// holding up the claims of every other queue for the session's whole lock_timeout: the
    /// waiting claim holds the store's shared write lock, and exclusive writers queued behind it
    /// hold up every later claim. (A bound of 1 s still stalled a worker's other queues for
    /// seconds.)
    static let lockQueueRowSQL = DialectSQL { d in
        switch d {
        case .sqlite: "SELECT name FROM jobq_queues WHERE name = ?"
        case .postgres:
            """
            WITH bound AS MATERIALIZED (SELECT set_config('lock_timeout', '200ms', true) AS value)
            SELECT name FROM jobq_queues WHERE name = ? AND (SELECT value FROM bound) IS NOT NULL \(d.forUpdate)
            """
        }
    }

    /// What `queue` has room for at `now`: its concurrency limit less its running jobs (claimed
    /// ahead ones included), and its rate less the starts in the window ending at `now`, per
    /// partition. With `pruning`, rows of starts that left the window are deleted first (a
    /// claim's write; a read passes false).
    static func capacity(_ db: some SQLTransaction, of queue: LimitedQueue, now: Double, pruning: Bool) throws
        -> QueueCapacity
    {
        typealias P = PartitionParameter
        let d = db.dialect
        let path = partitionPath(d, queue.partitioning)
        var running: [String: Int] = [:]
        if queue.concurrency != nil {
            let rows = try db.fetchRows(
                sql: """
                    SELECT \(partitionOf(d, queue.partitioning, path: "\(P.path)")), COUNT(*)
                    FROM jobq_jobs \(d.indexedBy("jobq_jobs_leases"))
                    WHERE state = 'running' AND queue = \(P.queue) GROUP BY 1
                    """,
                arguments: [queue.name, path])
            for row in rows { running[row.string(0)] = row.int(1) }
        }
        var started: [String: (count: Int, oldest: Double)] = [:]
        if let rate = queue.rate {
            let windowStart = now - rate.period
            if pruning {
                try db.execute(
                    sql: "DELETE FROM jobq_queue_starts WHERE queue = ? AND started_at <= ?",
                    arguments: [queue.name, windowStart])
            }
            let rows = try db.fetchRows(
                sql: """
                    SELECT partition_key, SUM(starts), MIN(started_at) FROM jobq_queue_starts
                    WHERE queue = ? AND started_at > ? GROUP BY partition_key
                    """,
                arguments: [queue.name, windowStart])
            for row in rows { started[row.string(0)] = (row.int(1), row.double(2)) }
        }
        let fresh = min(queue.concurrency ?? Int.max, queue.rate?.starts ?? Int.max)
        var capacity = QueueCapacity(
            queue: queue, left: [:], fresh: fresh, full: [], reopensAt: nil, startedInWindow: started.mapValues(\.count)
        )
        for partition in Set(running.keys).union(started.keys) {
            var left = fresh
            if let concurrency = queue.concurrency { left = min(left, concurrency - (running[partition] ?? 0)) }
            if let rate = queue.rate, let window = started[partition] {
                let byRate = rate.starts - window.count
                left = min(left, byRate)
                if byRate <= 0 {
                    let reopens = window.oldest + rate.period
                    capacity.reopensAt = min(capacity.reopensAt ?? reopens, reopens)
                }
            }
            capacity.left[partition] = left
            if left <= 0 { capacity.full.insert(partition) }
        }
        return capacity
    }

    /// The parameters of the statements that count or read a limited queue's jobs by
    /// partition: the queue, the payload path of its partition, the partitions with no place
    /// left (a JSON array), how many jobs to read, and the time now (for deadlines to start).
    enum PartitionParameter: Int32, SQLParameter {
        case queue = 1
        case path, full, limit, now
    }

    /// The ready jobs of a limited queue, in claim order, whose partition has a place (at most
    /// `limit`), each with its partition.
    private static func readyWithPlacesSQL(_ d: SQLDialect, _ partitioning: QueuePartitioning?) -> String {
        typealias P = PartitionParameter
        let partition = partitionOf(d, partitioning, path: "\(P.path)")
        return """
            SELECT \(ClaimedJob.columns(attempt: "attempt + 1")), \(partition) FROM jobq_jobs
            WHERE state = 'ready' AND queue = \(P.queue) AND \(partition) NOT IN (\(d.texts(in: "\(P.full)")))
                AND \(notExpired(at: "\(P.now)")) AND \(executorNotPaused)
            ORDER BY \(claimOrder) LIMIT \(P.limit)
            """
    }

    /// Claims up to `limit` ready jobs of a limited queue, no more than its places left (per
    /// partition when partitioned), counted under the queue's row lock. Returns the jobs and
    /// how many each partition took (`''` when not partitioned).
    ///
    /// A rate counts starts, so a rate-limited queue's jobs are claimed only into free slots
    /// (at most `startingNow`), where the claim records their start: none wait in a worker's
    /// buffer, and the time a start is counted at is the time its `started` event carries.
    static func claimLimited(
        _ db: some SQLTransaction, _ queue: LimitedQueue, limit: Int, startingNow: Int, workerID: String,
        leaseUntil: Double
    ) throws -> (jobs: [ClaimedJob], taken: [String: Int]) {
        let limit = queue.rate == nil ? limit : min(limit, startingNow)
        guard limit > 0 else { return ([], [:]) }
        try lockQueueRow(db, queue.name)
        let now = queue.rate == nil ? StoreSQL.now() : try clock(db)
        var capacity = try capacity(db, of: queue, now: now, pruning: true)
        guard queue.partitioning == nil else {
            return try claimPartitioned(
                db, capacity: &capacity, limit: limit, workerID: workerID, leaseUntil: leaseUntil)
        }
        let places = min(limit, capacity.places(""))
        guard places > 0 else { return ([], [:]) }
        let jobs = try claimReady(db, queue: queue.name, limit: places, workerID: workerID, leaseUntil: leaseUntil)
        return (jobs, ["": jobs.count])
    }

    /// Claims up to `limit` ready jobs of a partitioned queue in claim order, skipping the jobs
    /// of partitions with no place left, so a busy partition never holds back the others.
    /// Returns the jobs and how many each partition took.
    ///
    /// Each round reads the next jobs of partitions with places and takes them while their
    /// partition has places; a partition that fills is left out of the next round. The rounds
    /// are at most one more than the partitions that fill. The database still steps over the
    /// ready jobs of full partitions ahead in claim order, so a claim costs more the more jobs
    /// wait in full partitions before the first one that can run.
    static func claimPartitioned(
        _ db: some SQLTransaction, capacity: inout QueueCapacity, limit: Int, workerID: String, leaseUntil: Double
    ) throws -> (jobs: [ClaimedJob], taken: [String: Int]) {
        let d = db.dialect
        let queue = capacity.queue
        let read = try db.statement(sql: readyWithPlacesSQL(d, queue.partitioning))
        let path = partitionPath(d, queue.partitioning)
        var claimed: [ClaimedJob] = []
        var taken: [String: Int] = [:]
        while claimed.count < limit {
            read.bind(PartitionParameter.queue, queue.name)
            read.bind(PartitionParameter.full, jsonArray(capacity.full.sorted()))
            read.bind(PartitionParameter.limit, limit - claimed.count)
            read.bind(PartitionParameter.path, path)
            read.bind(PartitionParameter.now, StoreSQL.now())
            var round: [ClaimedJob] = []
            var exhausted = true
            while try read.step() {
                exhausted = false
                let partition = read.string(ClaimedJob.columnCount)
                guard capacity.places(partition) > 0 else { continue }
                capacity.take(partition)
                taken[partition, default: 0] += 1
                round.append(ClaimedJob(read))
            }
            read.reset()
            if exhausted || round.isEmpty { break }
            claimed += try markClaimed(db, round, workerID: workerID, leaseUntil: leaseUntil)
        }
        return (claimed, taken)
    }

    /// Records the starts a claim of a rate-limited queue made, by partition, at `startedAt`
    /// (the time its `started` events carry).
    static func recordRateStarts(
        _ db: some SQLTransaction, queue: String, taken: [String: Int], startedAt: Double
    ) throws {
        for (partition, count) in taken.sorted(by: { $0.key < $1.key }) where count > 0 {
            try db.execute(
                sql:
                    "INSERT INTO jobq_queue_starts (queue, partition_key, started_at, starts) VALUES (\(RecordRateStarts.queue), \(RecordRateStarts.partition), \(RecordRateStarts.startedAt), \(RecordRateStarts.starts))",
                arguments: RecordRateStarts.arguments([
                    .queue: queue, .partition: partition, .startedAt: startedAt, .starts: count
                ]))
        }
    }

    /// Whether a claim on `queue` would find a job it may take now, and if not, when a rate
    /// gives a place back. A read: the outlook idle workers take before claiming.
    static func limitedOutlook(_ db: some SQLTransaction, _ queue: LimitedQueue, now: Double) throws
        -> (claimable: Bool, reopensAt: Double?)
    {
        let capacity = try capacity(db, of: queue, now: now, pruning: false)
        let d = db.dialect
        typealias P = PartitionParameter
        let partition = partitionOf(d, queue.partitioning, path: "\(P.path)")
        let any =
            try db.fetchOne(
                Bool.self,
                sql: """
                    SELECT EXISTS (SELECT 1 FROM jobq_jobs WHERE state = 'ready' AND queue = \(P.queue)
                        AND \(partition) NOT IN (\(d.texts(in: "\(P.full)"))))
                    """,
                // The first three of the shared parameters, in their order.
                arguments: [queue.name, partitionPath(d, queue.partitioning), jsonArray(capacity.full.sorted())])
            ?? false
        return (any, any ? nil : capacity.reopensAt)
    }
}

extension StoreSQL {
    /// What `queue`'s limits hold back at `now`; per partition, the busiest `partitions`.
    /// Counts every ready job of the queue: a read for operators, not for the hot path.
    static func limitUsage(_ db: some SQLTransaction, _ queue: LimitedQueue, partitions: Int, now: Double) throws
        -> QueueLimitUsage
    {
        let d = db.dialect
        let path = partitionPath(d, queue.partitioning)
        typealias P = PartitionParameter
        let partition = partitionOf(d, queue.partitioning, path: "\(P.path)")
        var running: [String: Int] = [:]
        var ready: [String: Int] = [:]
        let counts = try db.fetchRows(
            sql: """
                SELECT \(partition), state, COUNT(*) FROM jobq_jobs
                WHERE (state = 'ready' OR state = 'running') AND queue = \(P.queue)
                GROUP BY 1, 2
                """,
            arguments: [queue.name, path])
        for row in counts {
            if row.string(1) == "running" {
                running[row.string(0)] = row.int(2)
            } else {
                ready[row.string(0)] = row.int(2)
            }
        }
        let capacity = queue.isLimited ? try capacity(db, of: queue, now: now, pruning: false) : nil
        let started = capacity?.startedInWindow ?? [:]
        let keys = Set(running.keys).union(ready.keys).union(started.keys)
        let usage = keys.map { key in
            let waiting = capacity.map { max(0, (ready[key] ?? 0) - max(0, $0.places(key))) } ?? 0
            return PartitionUsage(
                partition: key, running: running[key] ?? 0, ready: ready[key] ?? 0, waitingForCapacity: waiting,
                startsInWindow: queue.rate == nil ? nil : started[key] ?? 0)
        }.sorted {
            ($0.waitingForCapacity, $0.running, $1.partition) > ($1.waitingForCapacity, $1.running, $0.partition)
        }
        return QueueLimitUsage(
            limits: queue.limits, running: usage.reduce(0) { $0 + $1.running },
            ready: usage.reduce(0) { $0 + $1.ready },
            waitingForCapacity: usage.reduce(0) { $0 + $1.waitingForCapacity },
            startsInWindow: queue.rate == nil ? nil : usage.reduce(0) { $0 + ($1.startsInWindow ?? 0) },
            partitionCount: queue.partitioning == nil ? 0 : keys.count,
            busiestPartitions: queue.partitioning == nil ? [] : Array(usage.prefix(partitions)))
    }
}

extension PayloadPointer {
    /// SQLite's path for `json_extract`: `$."customer"."id"`.
    var sqlitePath: String { "$" + names.map { ".\"\($0)\"" }.joined() }

    /// PostgreSQL's path for `#>>`: `{customer,id}` with each name quoted.
    var postgresPath: String {
        "{" + names.map { "\"\($0)\"" }.joined(separator: ",") + "}"
    }
}

/// Starts counted against a queue's rate.
private enum RecordRateStarts: Int32, SQLParameter, CaseIterable {
    case queue = 1
    case partition, startedAt, starts
}
