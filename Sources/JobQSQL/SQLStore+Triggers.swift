import Foundation
import JobQCore

/// Event triggers: stored tasks per event name; an emit makes their jobs, ordered by priority
/// and by dependency edges between them, in one transaction.
extension SQLStore {
    /// Adds a trigger, or replaces the task of the same event and name (a `once` task that ran
    /// keeps that record). Refuses a dependency on a task that does not exist, and one that
    /// would close a cycle.
    package func addTrigger(_ trigger: Trigger, now: Date) async throws -> TriggerStatus {
        try trigger.validate()
        let request = trigger.request
        let options = request.options
        let seconds = now.timeIntervalSince1970
        return try await write(.short) { db in
            let siblings = try StoreSQL.triggers(db, event: trigger.event)
            let existed = siblings.contains { $0.task == trigger.task }
            let names = Set(siblings.map(\.task))
            if let missing = trigger.dependsOn.first(where: { !names.contains($0) }) {
                throw JobQueueError.invalidInput(
                    "trigger \(trigger.event)/\(trigger.task) depends on '\(missing)', which is not a task of event '\(trigger.event)'; "
                        + "add '\(missing)' first (`jobq trigger list --event \(trigger.event)` lists its tasks)")
            }
            var graph = Dictionary(uniqueKeysWithValues: siblings.map { ($0.task, $0.dependsOn) })
            graph[trigger.task] = trigger.dependsOn
            if let cycle = StoreSQL.cycle(through: trigger.task, in: graph) {
                throw JobQueueError.invalidInput(
                    "trigger \(trigger.event)/\(trigger.task): dependsOn would make a cycle (\(cycle.joined(separator: " -> "))); "
                        + "a task cannot wait for itself, directly or through others")
            }
            try db.execute(
                sql: """
                    INSERT INTO jobq_triggers (event, task, executor, payload, queue, priority, max_attempts, timeout, depends_on, once, paused,
                        created_at, updated_at)
                    VALUES (\(AddTrigger.event), \(AddTrigger.task), \(AddTrigger.executor), \(AddTrigger.payload), \(AddTrigger.queue), \(AddTrigger.priority), \(AddTrigger.maxAttempts), \(AddTrigger.timeout), \(AddTrigger.dependsOn), \(AddTrigger.once), 0, \(AddTrigger.now), \(AddTrigger.now))
                    ON CONFLICT (event, task) DO UPDATE SET executor = excluded.executor, payload = excluded.payload,
                        queue = excluded.queue, priority = excluded.priority, max_attempts = excluded.max_attempts,
                        timeout = excluded.timeout, depends_on = excluded.depends_on, once = excluded.once, paused = 0,
                        updated_at = excluded.updated_at
                    """,
                arguments: AddTrigger.arguments([
                    .event: trigger.event, .task: trigger.task, .executor: request.executor,
                    .payload: JSONText.minified(request.payloadJSON), .queue: options.queue,
                    .priority: options.priority, .maxAttempts: options.maxAttempts,
                    .timeout: options.timeout?.inSeconds, .dependsOn: StoreSQL.jsonArray(trigger.dependsOn),
                    .once: trigger.once, .now: seconds
                ]))
            try StoreSQL.triggerEvent(
                db, event: trigger.event, task: trigger.task, change: existed ? "replaced" : "added", now: seconds)
            return try StoreSQL.trigger(db, event: trigger.event, task: trigger.task)!
        }
    }

    package func triggers(event: String?) async throws -> [TriggerStatus] {
        try await read { db in
            if let event { return try StoreSQL.triggers(db, event: event) }
            return try db.fetchRows(sql: "SELECT \(TriggerStatus.columns) FROM jobq_triggers ORDER BY event, task").map(
                TriggerStatus.init)
        }
    }

    package func setTriggerPaused(event: String, task: String, paused: Bool, now: Date) async throws -> TriggerStatus {
        try await write(.short) { db in
            guard let status = try StoreSQL.trigger(db, event: event, task: task) else {
                throw StoreSQL.noTrigger(event, task)
            }
            guard status.paused != paused else { return status }
            let seconds = now.timeIntervalSince1970
            try db.execute(
                sql:
                    "UPDATE jobq_triggers SET paused = \(PauseTrigger.paused), updated_at = \(PauseTrigger.updatedAt) WHERE event = \(PauseTrigger.event) AND task = \(PauseTrigger.task)",
                arguments: PauseTrigger.arguments([.paused: paused, .updatedAt: seconds, .event: event, .task: task]))
            try StoreSQL.triggerEvent(
                db, event: event, task: task, change: paused ? "paused" : "resumed", now: seconds)
            return try StoreSQL.trigger(db, event: event, task: task)!
        }
    }

    /// Removes a trigger; the jobs it made stay. Refused while another task depends on it.
    package func removeTrigger(event: String, task: String, now: Date) async throws {
        try await write(.short) { db in
            let siblings = try StoreSQL.triggers(db, event: event)
            guard siblings.contains(where: { $0.task == task }) else { throw StoreSQL.noTrigger(event, task) }
            if let dependent = siblings.first(where: { $0.dependsOn.contains(task) }) {
                throw JobQueueError.invalidState(
                    "task \(event)/\(dependent.task) depends on \(task); remove \(dependent.task) first, "
                        + "or add it again without --depends-on \(task)")
            }
            try db.execute(sql: "DELETE FROM jobq_triggers WHERE event = ? AND task = ?", arguments: [event, task])
            try StoreSQL.triggerEvent(db, event: event, task: task, change: "removed", now: now.timeIntervalSince1970)
        }
    }

    /// Makes one job per active task of `event` and ends the durable functions' waits for it
    /// that its payload matches, in one transaction, or (for a dedupe key seen within 24 hours)
    /// returns the jobs of that earlier emit and does nothing.
    package func emit(event: String, payloadJSON: String, dedupe: String?, now: Date) async throws -> Emitted {
        try StoreSQL.checkEmit(event: event, payloadJSON: payloadJSON, dedupe: dedupe)
        let seconds = now.timeIntervalSince1970
        return try await write(.short) { db in
            try StoreSQL.emit(event: event, payloadJSON: payloadJSON, dedupe: dedupe, db: db, now: seconds)
        }
    }
}

extension StoreSQL {
    /// Refuses a bad event name, dedupe key or payload before anything is written.
    package static func checkEmit(event: String, payloadJSON: String, dedupe: String?) throws {
        try Names.check(event, what: "event name")
        if let dedupe { try Label.check(dedupe, what: "a dedupe key") }
        try JSONText.validate(payloadJSON, what: "the payload of event '\(event)'")
    }

    /// Everything an emit writes, in the transaction `db` (jobq's own, or the application's).
    package static func emit(
        event: String, payloadJSON: String, dedupe: String?, db: some SQLTransaction, now seconds: Double
    )
        throws -> Emitted
    {
        if let dedupe,
            let earlier = try db.fetchRow(
                sql: "SELECT job_ids, emitted_at FROM jobq_trigger_emits WHERE event = ? AND dedupe = ?",
                arguments: [event, dedupe])
        {
            if (earlier["emitted_at"] as Double) > seconds - dedupeWindow {
                let ids = try JSONDecoder().decode([JobID].self, from: Data((earlier["job_ids"] as String).utf8))
                let jobs = try ids.compactMap { id in
                    try db.fetchRow(sql: "SELECT \(Job.columns) FROM jobq_jobs WHERE id = ?", arguments: [id]).map {
                        Job($0)
                    }
                }
                return Emitted(jobs: jobs, deduplicated: true)
            }
        }
        let tasks = emitOrder(try triggers(db, event: event).filter(\.isActive))
        var jobs: [Job] = []
        var jobOfTask: [String: JobID] = [:]
        for task in tasks {
            let payload = try OrderedJSON.setting("event", to: payloadJSON, in: task.payloadJSON)
            let options = JobOptions(
                queue: task.queue, priority: task.priority, maxAttempts: task.maxAttempts, timeout: task.timeout,
                name: "\(event)/\(task.task)", after: task.dependsOn.compactMap { jobOfTask[$0] })
            let job = try insert(
                try JobRequest(executor: task.executor, payloadJSON: payload, options: options), db: db,
                now: seconds)
            jobOfTask[task.task] = job.id
            jobs.append(job)
        }
        try db.execute(
            sql:
                "UPDATE jobq_triggers SET ran_once_at = ? WHERE event = ? AND once = 1 AND ran_once_at IS NULL AND paused = 0",
            arguments: [seconds, event])
        let ids = "[" + jobs.map { String($0.id) }.joined(separator: ",") + "]"
        if let dedupe {
            try db.execute(
                sql: """
                    INSERT INTO jobq_trigger_emits (event, dedupe, job_ids, emitted_at) VALUES (\(RecordEmit.event), \(RecordEmit.dedupe), \(RecordEmit.jobs), \(RecordEmit.emittedAt))
                    ON CONFLICT (event, dedupe) DO UPDATE SET job_ids = excluded.job_ids, emitted_at = excluded.emitted_at
                    """,
                arguments: RecordEmit.arguments([.event: event, .dedupe: dedupe, .jobs: ids, .emittedAt: seconds]))
        }
        appendEvent(
            db, .triggerEmitted(event: event, rawJobs: ids, dedupe: dedupe), job: nil, queue: nil, executor: nil,
            batch: nil, now: seconds)
        let resumed = try deliverEvent(db, event: event, payloadJSON: payloadJSON, now: seconds)
        return Emitted(jobs: jobs, deduplicated: false, resumedFunctions: resumed)
    }
}

extension StoreSQL {
    /// How long a dedupe key of an emit is remembered.
    static let dedupeWindow: Double = 24 * 3600

    /// The order an emit stores its tasks in: a task after the tasks it depends on; among the
    /// tasks free to go, higher priority first, then by name. Dependencies on tasks that do not
    /// run in this emit (paused, or `once` and done) count as met.
    static func emitOrder(_ tasks: [TriggerStatus]) -> [TriggerStatus] {
        let names = Set(tasks.map(\.task))
        var waitingFor = Dictionary(
            uniqueKeysWithValues: tasks.map { ($0.task, Set($0.dependsOn).intersection(names)) })
        var remaining = tasks
        var ordered: [TriggerStatus] = []
        while !remaining.isEmpty {
            let free = remaining.filter { waitingFor[$0.task]!.isEmpty }
            // A cycle cannot be stored (``addTrigger``), so some task is always free.
            guard let next = free.min(by: { ($0.priority, $1.task) > ($1.priority, $0.task) }) else { break }
            ordered.append(next)
            remaining.removeAll { $0.task == next.task }
            for key in waitingFor.keys { waitingFor[key]!.remove(next.task) }
        }
        return ordered
    }

    /// A path from `start` back to itself through `graph` (task to the tasks it depends on).
    static func cycle(through start: String, in graph: [String: [String]]) -> [String]? {
        var visited: Set<String> = []
        func walk(_ task: String, _ path: [String]) -> [String]? {
            for next in graph[task] ?? [] {
                if next == start { return path + [next] }
                guard visited.insert(next).inserted else { continue }
                if let found = walk(next, path + [next]) { return found }
            }
            return nil
        }
        return walk(start, [start])
    }

    static func triggers(_ db: some SQLTransaction, event: String) throws -> [TriggerStatus] {
        try db.fetchRows(
            sql: "SELECT \(TriggerStatus.columns) FROM jobq_triggers WHERE event = ? ORDER BY task", arguments: [event]
        ).map(
            TriggerStatus.init)
    }

    static func trigger(_ db: some SQLTransaction, event: String, task: String) throws -> TriggerStatus? {
        try db.fetchRow(
            sql: "SELECT \(TriggerStatus.columns) FROM jobq_triggers WHERE event = ? AND task = ?",
            arguments: [event, task]
        ).map(
            TriggerStatus.init)
    }

    static func triggerEvent(_ db: some SQLTransaction, event: String, task: String, change: String, now: Double) throws
    {
        appendEvent(
            db, .trigger(event: event, task: task, change: change), job: nil, queue: nil, executor: nil, batch: nil,
            now: now)
    }

    static func noTrigger(_ event: String, _ task: String) -> JobQueueError {
        .notFound("no task '\(task)' for event '\(event)'; list triggers with `jobq trigger list`")
    }
}

extension TriggerStatus {
    /// The columns ``init(_:)`` reads, in the order a query selects them (``columns``).
    enum Column: Int32, SQLColumns {
        case event, task, executor, payload, queue, priority, maxAttempts, timeout, dependsOn, once, ranOnceAt, paused
        case createdAt, updatedAt
    }

    static let columns = Column.list

    /// Reads a row selected with ``columns``.
    init(_ row: some ColumnReader) {
        typealias C = Column
        self.init(
            event: row.string(C.event),
            task: row.string(C.task),
            executor: row.string(C.executor),
            payloadJSON: row.string(C.payload),
            queue: row.string(C.queue),
            priority: row.int(C.priority),
            maxAttempts: row.int(C.maxAttempts),
            timeout: row.optionalDouble(C.timeout).map(Duration.init(storedSeconds:)),
            dependsOn: (try? JSONDecoder.jobq.decode([String].self, from: Data(row.string(C.dependsOn).utf8))) ?? [],
            once: row.int64(C.once) != 0,
            ranOnceAt: row.optionalDouble(C.ranOnceAt).map(Date.init(timeIntervalSince1970:)),
            paused: row.int64(C.paused) != 0,
            createdAt: Date(timeIntervalSince1970: row.double(C.createdAt)),
            updatedAt: Date(timeIntervalSince1970: row.double(C.updatedAt)))
    }
}

/// A trigger's row.
private enum AddTrigger: Int32, SQLParameter, CaseIterable {
    case event = 1
    case task, executor, payload, queue, priority, maxAttempts, timeout, dependsOn, once, now
}

/// A trigger paused or resumed.
private enum PauseTrigger: Int32, SQLParameter, CaseIterable {
    case paused = 1
    case updatedAt, event, task
}

/// An emit's jobs, kept for its dedupe key.
private enum RecordEmit: Int32, SQLParameter, CaseIterable {
    case event = 1
    case dedupe, jobs, emittedAt
}
