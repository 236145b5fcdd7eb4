import Foundation
import JobQCore

/// Enqueueing, reading, and the operator's state changes (cancel, retry, pause, prune).
extension SQLStore {
    /// Inserts all requests in one write transaction of the store SQL: all of them or none. A
    /// request whose unique key a job holds gets that job instead. `lock`: `.shared` only for
    /// jobs that are their own row and event alone (``JobRequest/isSelfContained``); a unique
    /// key, a lane, a dependency or a batch reads what others write.
    package func enqueueInTransaction(_ requests: [JobRequest], lock: WriteLock) async throws -> [Enqueued] {
        try StoreSQL.validate(requests)
        // A few jobs are a small transaction; a big batch goes off the caller's thread.
        return try await write(
            requests.count <= 100 ? .short : .long, audience: .workersAndFollowers, lock: lock
        ) { db in
            // The time is read once the write lock is held, so that creation times follow
            // commit order (a unique key's next holder is never created before the last let go).
            try StoreSQL.enqueue(requests, db: db, now: StoreSQL.now())
        }
    }

    package func job(_ id: JobID) async throws -> Job? {
        try await read(.short) { db in
            try db.fetchRow(sql: "SELECT \(Job.columns) FROM jobq_jobs WHERE id = ?", arguments: [id]).map { Job($0) }
        }
    }

    /// Cancels a job that has not finished (``StoreSQL/cancel(_:_:now:)``).
    package func cancel(_ id: JobID) async throws -> Job {
        let now = StoreSQL.now()
        return try await write { db in try StoreSQL.cancel(try StoreSQL.existingJob(db, id), db, now: now).orThrow() }
    }

    /// Makes a failed, dead or cancelled job ready to run now (``StoreSQL/retry(_:_:now:)``).
    package func retry(_ id: JobID) async throws -> Job {
        let now = StoreSQL.now()
        return try await write { db in try StoreSQL.retry(try StoreSQL.existingJob(db, id), db, now: now).orThrow() }
    }

    /// Claims read the pauses in their own statements (``StoreSQL/executorNotPaused``, the
    /// queue settings): every worker's next claim obeys, on every machine. A pause keeps the
    /// time it began when given again.
    package func setPaused(_ target: PauseTarget, paused: Bool) async throws {
        let now = StoreSQL.now()
        try await write { db in
            switch (target, paused) {
            case (.queue(let queue), _):
                try db.execute(
                    sql: """
                        INSERT INTO jobq_queues (name, paused, paused_at) VALUES (?, ?, ?)
                        ON CONFLICT (name) DO UPDATE SET paused = excluded.paused,
                            paused_at = CASE WHEN excluded.paused = 0 THEN NULL
                                WHEN jobq_queues.paused <> 0 AND jobq_queues.paused_at IS NOT NULL THEN jobq_queues.paused_at
                                ELSE excluded.paused_at END
                        """,
                    arguments: [queue, paused, paused ? now : nil])
            case (.executor(let name), true):
                try db.execute(
                    sql:
                        "INSERT INTO jobq_paused_executors (name, paused_at) VALUES (?, ?) ON CONFLICT (name) DO NOTHING",
                    arguments: [name, now])
            case (.executor(let name), false):
                try db.execute(sql: "DELETE FROM jobq_paused_executors WHERE name = ?", arguments: [name])
            case (.all, true):
                try db.execute(
                    sql:
                        "INSERT INTO jobq_store_settings (name, value) VALUES ('paused_all', ?) ON CONFLICT (name) DO NOTHING",
                    arguments: [now])
            case (.all, false):
                try db.execute(sql: "DELETE FROM jobq_store_settings WHERE name = 'paused_all'")
            }
        }
    }

    package func pausedClaims() async throws -> PausedClaims {
        try await read(.short) { db in
            let rows = try db.fetchRows(
                sql: """
                    SELECT name, 0 FROM jobq_paused_executors
                    UNION ALL SELECT name, 1 FROM jobq_store_settings WHERE name = 'paused_all'
                    """)
            var paused = PausedClaims(all: false, executors: [])
            for row in rows {
                if row.int64(1) == 1 { paused.all = true } else { paused.executors.insert(row.string(0)) }
            }
            return paused
        }
    }

    package func setLimits(_ limits: QueueLimits, for queue: String) async throws {
        // A limit raised or removed may let waiting jobs run: workers are told.
        try await write { db in
            let previous = try db.fetchOne(
                String.self, sql: "SELECT partition_by FROM jobq_queues WHERE name = ?", arguments: [queue])
            try db.execute(
                sql: """
                    INSERT INTO jobq_queues (name, paused, concurrency_limit, rate_limit, rate_period, partition_by)
                    VALUES (\(SetLimits.queue), 0, \(SetLimits.concurrency), \(SetLimits.rateStarts), \(SetLimits.ratePeriod), \(SetLimits.partitionBy))
                    ON CONFLICT (name) DO UPDATE SET concurrency_limit = excluded.concurrency_limit,
                        rate_limit = excluded.rate_limit, rate_period = excluded.rate_period,
                        partition_by = excluded.partition_by
                    """,
                arguments: SetLimits.arguments([
                    .queue: queue, .concurrency: limits.concurrency, .rateStarts: limits.rate?.starts,
                    .ratePeriod: limits.rate?.period.inSeconds, .partitionBy: limits.partitionBy?.description
                ]))
            // Starts counted by other partitions (or by a rate no longer set) say nothing about
            // the new ones: the window starts afresh.
            if limits.rate == nil || previous != limits.partitionBy?.description {
                try db.execute(sql: "DELETE FROM jobq_queue_starts WHERE queue = ?", arguments: [queue])
            }
        }
    }

    /// `queue`'s limits, and what they hold back now: per partition, the busiest `partitions`.
    package func limitUsage(of queue: String, partitions: Int) async throws -> QueueLimitUsage? {
        try await read { db in
            guard
                let settings = try db.fetchRows(
                    sql: "SELECT \(LimitedQueue.columns) FROM jobq_queues WHERE name = ?", arguments: [queue]
                ).first.map({ LimitedQueue($0) })
            else { return nil }
            return try StoreSQL.limitUsage(db, settings, partitions: partitions, now: StoreSQL.clock(db))
        }
    }

    /// Deletes finished jobs in `states` that finished before `cutoff`. Returns how many.
    package func prune(finishedBefore cutoff: Date, states: Set<JobState>) async throws -> Int {
        let names = states.map(\.rawValue).sorted()
        return try await write { db in
            // What retention would delete: never a job something unfinished still refers to (a
            // lane's halting job, a job others wait on, an open batch's member, a key held).
            let ids = try db.fetchAll(
                JobID.self,
                sql: """
                    SELECT id FROM jobq_jobs
                    WHERE finished_at IS NOT NULL AND finished_at < \(FinishedBefore.cutoff) AND state IN (\(db.dialect.texts(in: "\(FinishedBefore.states)")))
                        AND \(StoreSQL.unreferenced(now: "\(FinishedBefore.now)"))
                    """,
                arguments: FinishedBefore.arguments([
                    .cutoff: cutoff.timeIntervalSince1970, .states: StoreSQL.jsonArray(names), .now: StoreSQL.now()
                ]))
            // Events go with their jobs, so the feed never grows without bound; followers
            // behind them are told.
            for chunk in ids.chunks(of: 10_000) { try StoreSQL.deleteJobs(db, Array(chunk)) }
            let removed = ids.count
            try StoreSQL.deleteEmptyWorkflows(db, finishedBefore: cutoff.timeIntervalSince1970)
            // Events of no job (trigger emits, batches, workflows) older than the cutoff go too,
            // and followers behind them are told as well.
            _ = try StoreSQL.deleteEvents(
                db, where: "job_id IS NULL AND created_at < ?", arguments: [cutoff.timeIntervalSince1970])
            // Dedupe keys of emits are remembered for 24 hours; older ones answer nothing.
            try db.execute(
                sql: "DELETE FROM jobq_trigger_emits WHERE emitted_at < ?",
                arguments: [StoreSQL.now() - StoreSQL.dedupeWindow])
            return removed
        }
    }

    package func status(liveWithin: TimeInterval) async throws -> StoreStatus {
        let cutoff = StoreSQL.now() - liveWithin
        return try await read { db in
            var queues: [String: QueueStatus] = [:]
            func entry(_ name: String) -> QueueStatus {
                queues[name]
                    ?? QueueStatus(
                        name: name, paused: false,
                        counts: Dictionary(uniqueKeysWithValues: JobState.allCases.map { ($0.rawValue, 0) }))
            }
            for row in try db.fetchRows(sql: StoreSQL.countsSQL[db.dialect]) {
                let name: String = row["queue"]
                var status = entry(name)
                status.counts[row["state"], default: 0] += row["n"] as Int
                queues[name] = status
            }
            for row in try db.fetchRows(sql: "SELECT \(LimitedQueue.columns), paused_at FROM jobq_queues") {
                let settings = LimitedQueue(row)
                var status = entry(settings.name)
                status.paused = settings.paused
                status.pausedSince = row.optionalDouble(LimitedQueue.Column.count).map(
                    Date.init(timeIntervalSince1970:))
                status.limits = settings.limits
                queues[settings.name] = status
            }
            let pausedExecutors = try db.fetchRows(
                sql: "SELECT name, paused_at FROM jobq_paused_executors ORDER BY name"
            ).map { row in
                PausedExecutor(name: row.string(0), since: Date(timeIntervalSince1970: row.double(1)))
            }
            let pausedAll = try db.fetchOne(
                Double.self, sql: "SELECT value FROM jobq_store_settings WHERE name = 'paused_all'")
            let workers = try db.fetchRows(
                sql: "SELECT * FROM jobq_workers WHERE heartbeat_at >= ? ORDER BY started_at", arguments: [cutoff]
            ).map { row in
                WorkerStatus(
                    id: row["id"], host: row["host"], pid: row["pid"],
                    queues: (try? JSONDecoder().decode([String].self, from: Data((row["queues"] as String).utf8)))
                        ?? [],
                    concurrency: row["concurrency"],
                    startedAt: Date(timeIntervalSince1970: row["started_at"]),
                    heartbeatAt: Date(timeIntervalSince1970: row["heartbeat_at"]))
            }
            return StoreStatus(
                queues: queues.values.sorted { $0.name < $1.name }, workers: workers,
                pausedExecutors: pausedExecutors, allPausedSince: pausedAll.map(Date.init(timeIntervalSince1970:)),
                schemaVersion: try Self.schemaVersion(db),
                runningWorkflows: try db.fetchOne(
                    Int.self, sql: "SELECT COUNT(*) FROM jobq_workflows WHERE state = 'running'") ?? 0)
        }
    }
}

extension StoreSQL {
    /// Refuses the batch if one request is bad, naming which.
    package static func validate(_ requests: [JobRequest]) throws {
        for (index, request) in requests.enumerated() {
            do {
                try request.validate()
            } catch {
                throw requests.count == 1
                    ? error : .invalidInput("job \(index + 1) of \(requests.count): \(error.description)")
            }
        }
    }

    /// Everything an enqueue writes, in the transaction `db` (jobq's own, or the application's):
    /// each job's row and event, or the job that holds its unique key.
    package static func enqueue(_ requests: [JobRequest], db: some SQLTransaction, now: Double) throws -> [Enqueued] {
        try requests.map { request in
            if request.isSelfContained {
                return Enqueued(job: try insertSelfContained(request, db: db, now: now), existed: false)
            }
            if let unique = request.options.unique, let holder = try takeUniqueKey(db, unique.key, now: now) {
                return Enqueued(
                    job: try update(holder, by: unique.onConflict, with: request, db: db, now: now), existed: true)
            }
            return Enqueued(job: try insert(request, db: db, now: now), existed: false)
        }
    }

    /// The holder of a unique key, changed by an enqueue of the key as its rule says
    /// (``UniqueConflict``), with an `updated` event; as it is when the rule keeps it, or when it
    /// has started (or is being claimed: the UPDATE then finds it running and changes nothing).
    ///
    /// A replace or a debounce changes only a job of the request's executor and queue: a key
    /// held by another kind of job is refused, and nothing changes. A debounce that puts the job
    /// off moves its expiry deadline (``JobOptions/expiresAt``) by as much, so that a job put off
    /// by a debounce keeps the time it had to start.
    static func update(
        _ holder: Job, by rule: UniqueConflict, with request: JobRequest, db: some SQLTransaction, now: Double
    )
        throws -> Job
    {
        let runAt: Double
        let by: String
        switch rule {
        case .keep:
            return holder
        case .replace:
            runAt = holder.runAt.timeIntervalSince1970
            by = "replace"
        case .debounce(let quiet, let longest):
            let latest = holder.createdAt.timeIntervalSince1970 + longest.inSeconds
            runAt = max(holder.runAt.timeIntervalSince1970, min(now + quiet.inSeconds, latest))
            by = "debounce"
        }
        guard holder.executor == request.executor, holder.queue == request.options.queue else {
            throw JobQueueError.invalidInput(
                "unique key '\(holder.uniqueKey ?? "")' is held by job \(holder.id), a '\(holder.executor)' job in queue "
                    + "'\(holder.queue)': a \(by) changes only a job of the same executor and queue ('\(request.executor)' in "
                    + "'\(request.options.queue)'), so nothing was enqueued or changed. Give this job a key of its own "
                    + "(prefix it with its executor's name, say), or keep the holder (the default conflict rule)")
        }
        guard [.waiting, .scheduled, .ready].contains(holder.state) else { return holder }
        let expiresAt = holder.expiresAt.map { $0.timeIntervalSince1970 + (runAt - holder.runAt.timeIntervalSince1970) }
        guard
            let row = try db.fetchRow(
                sql: """
                    UPDATE jobq_jobs SET payload = \(db.dialect.json("\(ReplaceUniqueJob.payload)")), priority = \(ReplaceUniqueJob.priority), run_at = \(ReplaceUniqueJob.runAt),
                        expires_at = \(ReplaceUniqueJob.expiresAt),
                        state = CASE WHEN state = 'ready' AND \(ReplaceUniqueJob.delays) <> 0 THEN 'scheduled' ELSE state END
                    WHERE id = \(ReplaceUniqueJob.id) AND state IN ('waiting', 'scheduled', 'ready') RETURNING \(Job.columns)
                    """,
                arguments: ReplaceUniqueJob.arguments([
                    .payload: request.payloadJSON, .priority: request.options.priority, .runAt: runAt,
                    .expiresAt: expiresAt, .delays: runAt > now,
                    .id: holder.id
                ]))
        else { return holder }
        let updated = Job(row)
        appendEvent(
            db, .updated(by: by, runAt: runAt, priority: request.options.priority), job: holder.id,
            queue: holder.queue, executor: holder.executor, batch: holder.batch, now: now)
        return updated
    }
}

extension StoreSQL {
    /// Where a workflow step sits, and what it waits for (set by ``submit(_:)``).
    struct Placement {
        let workflow: WorkflowID
        let group: Int64
        let position: Int
        /// `job:<id>` or `group:<id>`: the member whose result the step gets as "previous".
        let inputFrom: String?
        let edges: [(DependencyTarget, String?)]
        /// The tree node the job is a job of.
        var treeNode: Int64? = nil
    }

    /// Inserts one job inside the caller's transaction, with its `enqueued` event, counting it
    /// into its batch, appending it to its lane, and recording what it waits for: it is
    /// `waiting` until those dependencies are met.
    static func insert(_ request: JobRequest, db: some SQLTransaction, now: Double, placement: Placement? = nil) throws
        -> Job
    {
        let options = request.options
        if options.unique != nil, placement != nil {
            throw JobQueueError.invalidInput(
                "a workflow step or tree node cannot have a unique key (its place in its workflow already makes it one of a kind); "
                    + "drop `unique` from its options")
        }
        var edges = placement?.edges ?? []
        var failedDependencies: [String] = []
        var runAtOnce = false
        for id in Set(options.after).sorted() {
            let policy = options.dependencyPolicies[id] ?? options.onDependencyFailure
            let dependency = try Self.existingJob(db, id, role: "dependency")
            switch dependency.state {
            case .succeeded:
                continue
            case .dead, .cancelled:
                guard policy == .ignore || policy == .run else {
                    throw JobQueueError.invalidInput(
                        "dependency \(id) is already \(dependency.state.rawValue), so a job that waits for it with policy '\(policy.rawValue)' "
                            + "could never run; retry job \(id) first, or give the policy ignore or run")
                }
                failedDependencies.append(
                    failedDependencyJSON(target: .job(id), failure: FinishedJob(dependency), groupFailure: nil))
                if policy == .run { runAtOnce = true }
            default:
                edges.append((.job(id), options.dependencyPolicies[id]?.rawValue))
            }
        }
        if let lane = options.lane,
            let previous = try laneDependency(db, lane: lane, policy: options.laneOnFailure, now: now)
        {
            edges.append((.job(previous), "lane"))
        }
        let unmet = runAtOnce ? 0 : edges.count
        let insert = try db.statement(sql: insertJobSQL[db.dialect])
        let runAt = options.runAt?.timeIntervalSince1970 ?? now
        let state: JobState = unmet > 0 ? .waiting : runAt > now ? .scheduled : .ready
        let event = NewJobEvent(
            EventData.enqueued(
                state: state, runAt: runAt, priority: options.priority, waitingFor: unmet, lane: options.lane
            ).rendered, db.dialect)
        typealias P = InsertJob
        insert.bind(P.queue, options.queue)
        insert.bind(P.executor, request.executor)
        insert.bind(P.payload, db.dialect.storedJSON(request.payloadJSON))
        insert.bind(P.priority, options.priority)
        insert.bind(P.state, state.rawValue)
        insert.bind(P.maxAttempts, options.maxAttempts)
        insert.bind(P.runAt, runAt)
        insert.bind(P.timeout, options.timeout?.inSeconds)
        insert.bind(P.createdAt, now)
        insert.bind(P.name, options.name)
        insert.bind(P.batch, options.batch)
        insert.bind(P.unmet, unmet)
        insert.bind(P.onDependencyFailure, options.after.isEmpty ? nil : options.onDependencyFailure.rawValue)
        insert.bind(
            P.failedDependencies,
            failedDependencies.isEmpty ? nil : "[" + failedDependencies.joined(separator: ",") + "]")
        insert.bind(P.workflow, placement?.workflow)
        insert.bind(P.group, placement?.group)
        insert.bind(P.position, placement.map { Int64($0.position) })
        insert.bind(P.inputFrom, placement?.inputFrom)
        insert.bind(P.lane, options.lane)
        insert.bind(P.treeNode, placement?.treeNode)
        insert.bind(P.uniqueKey, options.unique?.key)
        insert.bind(P.uniqueStates, options.unique.map { Int64($0.stateBits) })
        insert.bind(P.uniquePeriod, options.unique?.period?.inSeconds)
        insert.bind(P.traceContext, request.traceContextJSON)
        insert.bind(P.partition, options.partition)
        insert.bind(P.expiresAt, options.expiresAt?.timeIntervalSince1970)
        event.bind(to: insert, at: P.enqueuedData)
        guard try insert.step() else { throw JobQueueError.storeUnavailable("inserting a job returned no row") }
        let job = Job(insert)
        insert.reset()
        if !edges.isEmpty { try insertEdges(db, job: job.id, on: edges) }
        if let lane = options.lane { try setLaneTail(db, lane: lane, job: job.id) }
        if let batch = options.batch { try addToBatch(db, name: batch) }
        event.append(
            to: db, at: now, job: job.id, queue: job.queue, executor: job.executor, batch: job.batch,
            workflow: job.workflowID)
        return job
    }

    /// The parameters of a job's row as an enqueue inserts it.
    enum InsertJob: Int32, SQLParameter {
        case queue = 1
        case executor, payload, priority, state, maxAttempts, runAt, timeout, createdAt, name, batch
        case unmet, onDependencyFailure, failedDependencies, workflow, group, position, inputFrom, lane, treeNode
        case uniqueKey, uniqueStates, uniquePeriod, traceContext, partition, expiresAt, enqueuedData
    }

    static let insertJobSQL = DialectSQL { d in
        typealias P = InsertJob
        return jobInsertSQL(
            d,
            [
                "queue": "\(P.queue)", "executor": "\(P.executor)", "payload": d.json("\(P.payload)"),
                "priority": "\(P.priority)", "state": "\(P.state)", "max_attempts": "\(P.maxAttempts)",
                "run_at": "\(P.runAt)", "timeout": "\(P.timeout)", "created_at": "\(P.createdAt)", "name": "\(P.name)",
                "batch": "\(P.batch)", "unmet": "\(P.unmet)", "on_dependency_failure": "\(P.onDependencyFailure)",
                "failed_dependencies": "\(P.failedDependencies)", "workflow_id": "\(P.workflow)",
                "group_id": "\(P.group)", "group_position": "\(P.position)", "input_from": "\(P.inputFrom)",
                "lane": "\(P.lane)", "tree_node": "\(P.treeNode)", "unique_key": "\(P.uniqueKey)",
                // A unique job holds its key from the start.
                "unique_hold": "\(P.uniqueKey)", "unique_states": "\(P.uniqueStates)",
                "unique_for": "\(P.uniquePeriod)", "trace_context": "\(P.traceContext)",
                "partition_key": "\(P.partition)", "expires_at": "\(P.expiresAt)"
            ], enqueuedData: P.enqueuedData, returning: Job.columns)
    }

    /// Jobs per queue and state, each state counted from the partial index that holds it, so
    /// that status costs the same whether or not rows are large (and never reads them for
    /// finished jobs, the bulk of a store). Finished jobs are exactly those with finished_at.
    /// Jobs by queue and state (`queue`, `state`, `n`), each state counted on its own index.
    static let countsSQL = DialectSQL { d in
        unfinishedCountsSQL[d] + """

            UNION ALL
            SELECT queue, state, COUNT(*) FROM jobq_jobs \(d.indexedBy("jobq_jobs_finished")) WHERE finished_at IS NOT NULL GROUP BY queue, state
            """
    }

    /// ``countsSQL`` of the unfinished states only: no read of the finished jobs' index.
    static let unfinishedCountsSQL = DialectSQL { d in
        """
        SELECT queue, 'ready' AS state, COUNT(*) AS n FROM jobq_jobs WHERE state = 'ready' GROUP BY queue
        UNION ALL
        SELECT queue, 'running', COUNT(*) FROM jobq_jobs \(d.indexedBy("jobq_jobs_leases")) WHERE state = 'running' GROUP BY queue
        UNION ALL
        SELECT queue, state, COUNT(*) FROM jobq_jobs \(d.indexedBy("jobq_jobs_due")) WHERE \(StoreSQL.dueState) GROUP BY queue, state
        UNION ALL
        SELECT queue, 'waiting', COUNT(*) FROM jobq_jobs \(d.indexedBy("jobq_jobs_waiting")) WHERE state = 'waiting' GROUP BY queue
        """
    }

    static func existingJob(_ db: some SQLTransaction, _ id: JobID, role: String? = nil) throws -> Job {
        guard let row = try db.fetchRow(sql: "SELECT \(Job.columns) FROM jobq_jobs WHERE id = ?", arguments: [id])
        else {
            if let role {
                // Bad input to the enqueue, rather than a lookup that found nothing.
                throw JobQueueError.invalidInput(
                    "\(role) \(id) does not exist; a job can only wait for jobs that are already stored (list them with `jobq list`)"
                )
            }
            throw JobQueueError.notFound("no job with id \(id); list jobs with `jobq list`")
        }
        return Job(row)
    }

    package static func jsonArray(_ values: [String]) -> String {
        "[" + values.map(JSONText.string).joined(separator: ",") + "]"
    }

    /// Job ids as a JSON array, for `\(dialect.integer("id", in: "?"))`.
    package static func jsonArray(_ ids: some Sequence<JobID>) -> String {
        "[" + ids.map(String.init).joined(separator: ",") + "]"
    }

    /// Values that are JSON text already, as a JSON array.
    package static func jsonArray(raw elements: [String]) -> String { "[" + elements.joined(separator: ",") + "]" }

    /// Members whose values are JSON text already (nil for null), as a JSON object.
    static func jsonObject(_ members: [(key: String, value: String?)]) -> String {
        "{" + members.map { JSONText.string($0.key) + ":" + ($0.value ?? "null") }.joined(separator: ",") + "}"
    }
}

extension JobRequest {
    /// A job that is only its own row and its `enqueued` event: no unique key, lane,
    /// dependency or batch, whose enqueue reads or changes other rows.
    package var isSelfContained: Bool {
        options.unique == nil && options.lane == nil && options.after.isEmpty && options.batch == nil
            && options.partition == nil && options.expiresAt == nil
    }
}

/// A queue's limits.
private enum SetLimits: Int32, SQLParameter, CaseIterable {
    case queue = 1
    case concurrency, rateStarts, ratePeriod, partitionBy
}

/// Finished jobs of some states, before a time, that nothing refers to.
private enum FinishedBefore: Int32, SQLParameter, CaseIterable {
    case cutoff = 1
    case states, now
}

/// A unique job's payload, priority, run time and expiry, replaced by a later enqueue; `delays`:
/// whether the new run time is in the future (a ready job becomes scheduled).
private enum ReplaceUniqueJob: Int32, SQLParameter, CaseIterable {
    case payload = 1
    case priority, runAt, expiresAt, delays, id
}
