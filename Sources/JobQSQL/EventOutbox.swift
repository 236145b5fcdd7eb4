import Foundation
import JobQCore

/// The events a write transaction writes, in the order its code appended them, inserted
/// together just before it commits (``SQLTransaction/writing(_:)``): the one way events are
/// written from Swift. One multi-row INSERT per 64 events instead of one statement each, which
/// is what a claim or a batch of completions writes most; and since every event goes through
/// here, their order is the order of the code that appended them, with no flush to place by
/// hand. Nothing in a write transaction reads its own events back.
package final class EventOutbox {
    private struct Row {
        let job: JobID?
        let kind: EventKind
        let queue: String?
        let executor: String?
        let batch: String?
        let data: String?
        let createdAt: Double
        let workflow: WorkflowID?
    }

    /// Rows per INSERT at most: 64 x 8 parameters stay far below SQLite's limit.
    static let maximumRows = 64
    private var rows: [Row] = []
    /// The write's time (``SQLTransaction/events(at:)``); read from the clock when first asked.
    private var stamp: Double?

    /// The time the write's events, and the columns of the changes they describe, are stamped
    /// with: set by the write (``SQLTransaction/events(at:)``), else read from the clock the
    /// first time it is asked, so that every part of one write says the same time.
    var now: Double {
        if let stamp { return stamp }
        let now = StoreSQL.now()
        stamp = now
        return now
    }

    func stamp(_ now: Double) { stamp = now }

    package init() {}

    var isEmpty: Bool { rows.isEmpty }
    /// Events appended and not written yet.
    var count: Int { rows.count }

    /// Forgets the events appended after the first `count` (their writes were rolled back).
    func truncate(to count: Int) {
        rows.removeSubrange(min(count, rows.count)...)
    }

    func append(
        job: JobID?, kind: EventKind, queue: String?, executor: String?, batch: String?, data: String?,
        createdAt: Double, workflow: WorkflowID?
    ) {
        rows.append(
            Row(
                job: job, kind: kind, queue: queue, executor: executor, batch: batch, data: data,
                createdAt: createdAt, workflow: workflow))
    }

    /// Inserts the events appended so far, in order, and forgets them.
    ///
    /// On SQLite a job's `enqueued` event is read from the job's row at the job's id
    /// (``SQLDialect/keepsEnqueuedEventInJobRow``), so jobs and events take ids from one counter:
    /// the events' counter is brought up to the jobs' before the insert (these events come after
    /// every job inserted so far) and the jobs' up to the events' after it (a job inserted later
    /// comes after these events). Writes on SQLite run one at a time, so ids follow commit order.
    func write(_ db: some SQLTransaction) throws {
        let sharesCounter = db.dialect.keepsEnqueuedEventInJobRow
        if sharesCounter { try db.statement(sql: Self.levelCountersSQL).run() }
        for chunk in rows.chunks(of: Self.maximumRows) {
            let insert = try db.statement(sql: Self.insertSQL[chunk.count])
            for (offset, row) in chunk.enumerated() {
                let base = Int32(offset * 8)
                insert.bind(base + 1, row.job)
                insert.bind(base + 2, row.kind.rawValue)
                insert.bind(base + 3, row.queue)
                insert.bind(base + 4, row.executor)
                insert.bind(base + 5, row.batch)
                insert.bind(base + 6, row.data)
                insert.bind(base + 7, row.createdAt)
                insert.bind(base + 8, row.workflow)
            }
            try insert.run()
        }
        if sharesCounter { try db.statement(sql: Self.levelCountersSQL).run() }
        rows.removeAll(keepingCapacity: true)
    }

    /// Brings jobq_jobs' and jobq_events' AUTOINCREMENT counters up to the higher of the two.
    /// Comparisons, not `name IN (...)`, whose temporary b-tree SQLite builds on every run.
    package static let levelCountersSQL = """
        UPDATE sqlite_sequence
        SET seq = (SELECT MAX(seq) FROM sqlite_sequence WHERE name = 'jobq_jobs' OR name = 'jobq_events')
        WHERE name = 'jobq_jobs' OR name = 'jobq_events'
        """

    /// `insertSQL[n]` inserts n events.
    static let insertSQL: [String] = (0...maximumRows).map { count in
        "INSERT INTO jobq_events (job_id, kind, queue, executor, batch, data, created_at, workflow_id) VALUES "
            + Array(repeating: "(?, ?, ?, ?, ?, ?, ?, ?)", count: count).joined(separator: ", ")
    }
}

extension SQLTransaction {
    /// Runs a write transaction's body, then inserts the events it appended: every store's
    /// write (its own and the caller's transaction) goes through here.
    package func writing<T>(_ body: (Self) throws -> T) throws -> T {
        let result = try body(self)
        if !outbox.isEmpty { try outbox.write(self) }
        return result
    }

    /// The events this write appends, stamped with the write's time (``EventOutbox/now``):
    /// what the functions that write a state change's consequences append to, the transaction
    /// owning its outbox, so that none of them is handed one.
    var events: StoreSQL.PendingEvents { StoreSQL.PendingEvents(outbox) }

    /// Sets the write's time to `now` (the moment the change is recorded at, which a claim and
    /// a schedule choose) and returns the write's events; later parts of the write see it too.
    ///
    /// ```swift
    /// let events = db.events(at: StoreSQL.now())
    /// events.append(.cancelled(reason: reason), job: id, queue: queue, executor: executor, batch: nil)
    /// ```
    func events(at now: Double) -> StoreSQL.PendingEvents {
        stamp(now)
        return events
    }

    /// Sets the write's time to `now` for everything the write records after it (its events,
    /// and the times of the changes they describe).
    func stamp(_ now: Double) { outbox.stamp(now) }
}

extension StoreSQL {
    /// Appends an event inside the caller's transaction.
    static func appendEvent(
        _ db: some SQLTransaction, _ data: EventData, job: JobID?, queue: String?, executor: String?, batch: String?,
        now: Double, workflow: WorkflowID? = nil
    ) {
        db.outbox.append(
            job: job, kind: data.kind, queue: queue, executor: executor, batch: batch, data: data.text, createdAt: now,
            workflow: workflow)
    }

    /// A view of the transaction's outbox (``EventOutbox``) that stamps the events appended
    /// through it with the write's time (``SQLTransaction/events``).
    struct PendingEvents {
        private let outbox: EventOutbox

        init(_ outbox: EventOutbox) { self.outbox = outbox }

        /// The write's time.
        var now: Double { outbox.now }

        func append(
            _ data: EventData, job: JobID?, queue: String?, executor: String?, batch: String?,
            workflow: WorkflowID? = nil
        ) {
            append(data.rendered, job: job, queue: queue, executor: executor, batch: batch, workflow: workflow)
        }

        /// The same with data rendered once for many events.
        func append(
            _ data: RenderedEventData, job: JobID?, queue: String?, executor: String?, batch: String?,
            workflow: WorkflowID? = nil
        ) {
            outbox.append(
                job: job, kind: data.kind, queue: queue, executor: executor, batch: batch, data: data.text,
                createdAt: now, workflow: workflow)
        }

        /// The `started` event of a claimed attempt.
        func append(startedOf job: ClaimedJob, workerID: String) {
            append(
                .started(attempt: job.attempt, worker: workerID), job: job.id, queue: job.queue,
                executor: job.executor, batch: job.batch, workflow: job.workflowID)
        }
    }
}

/// The data of every event jobq writes, one case per kind (and per shape a kind takes): the
/// vocabulary followers read as an event's `data` object, written in one place with its keys in
/// order (``text``), and the kind of the event taken from its data (``kind``), so that no event
/// is written with another kind's data. PostgreSQL's own statements that write events (the
/// one-statement claim's `started`, the success function's `succeeded`) produce the same bytes;
/// `EventBytesTests` compares every kind across the stores, and `EventVocabularyTests` against
/// the recorded vocabulary.
///
/// Values marked `raw` are JSON text already (a result, counts, a list of failures).
package enum EventData: Sendable {
    // A job's life.
    /// `waitingFor`: dependencies not met yet (0: none, left out); `schedule`: the schedule and
    /// occurrence that made it. A job of a tree that is dead from the start says its state only.
    case enqueued(
        state: JobState, runAt: Double? = nil, priority: Int? = nil, waitingFor: Int = 0, lane: String? = nil,
        schedule: (name: String, occurrence: Double)? = nil)
    case started(attempt: Int, worker: String)
    case progress(attempt: Int, fraction: Double?, message: String?, rawData: String?)
    case succeeded(attempt: Int, reason: String? = nil, rawResult: String?)
    /// A failed or timed-out attempt that will be retried (kind `failed` or `timedOut`).
    case retrying(attempt: Int, reason: String? = nil, error: String, retryAt: Double, timedOut: Bool)
    /// A timed-out attempt that ends the job (written before its `dead` event).
    case timedOutForGood(attempt: Int, error: String)
    case dead(attempt: Int, reason: String? = nil, error: String, timedOut: Bool = false)
    case released(attempt: Int, reason: String?)
    case snoozed(attempt: Int, reason: String? = nil, until: Double, snoozes: Int, checkpoint: Bool)
    // Durable functions.
    /// A function recorded a step, a sleep or a wait, or a wait ended.
    case step(attempt: Int, step: FunctionStep)
    /// A function gave its slot back until `until`, or until the signal `awaiting`.
    case parked(attempt: Int, until: Double, awaiting: String?, calls: [JobID] = [])
    /// A signal was sent to the job; `woke`: the job was parked for it and is ready now.
    case signal(name: String, signal: Int64, woke: Bool)
    /// Cancelling a durable function was asked for: it runs once more to compensate.
    case cancelling(from: String)
    /// A job ended from outside its attempts: by an operator, a dependency's policy, a group or
    /// a deadline (`expired`); `why` is the error of a `dead` one and the reason of the others.
    case ended(EndKind, from: String, why: String?)
    case retried(from: String, maxAttempts: Int)
    /// An enqueue that met a unique job replaced (`by`) its payload, run time and priority.
    case updated(by: String, runAt: Double, priority: Int)
    // What jobs belong to.
    case lane(name: String, change: LaneChange, job: JobID)
    case batch(name: String, rawCounts: String, completeJob: JobID?, successJob: JobID?)
    case tracking(set: String, round: Int, rawResults: String)
    case group(
        id: Int64, name: String?, path: String, kind: String, state: String, rawCounts: String?,
        rawFailures: String?, error: String?)
    case workflow(name: String?, state: String, rawCounts: String, error: String?)
    case subtree(
        group: Int64, node: String, path: String, job: JobID?, state: String, rawCounts: String?,
        rawFailures: String?, error: String?)
    case tree(
        tree: Int64, group: Int64, node: String, path: String, job: JobID?, state: String, rawCounts: String,
        rawFailures: String?, error: String?)
    // Schedules and triggers.
    case schedule(name: String, change: String)
    case triggerEmitted(event: String, rawJobs: String, dedupe: String?)
    case trigger(event: String, task: String, change: String)
    // Operators.
    /// A bulk action ended; `skipped` counts refusals by reason.
    case bulk(action: String, filter: String, matched: Int, changed: Int, skipped: [String: Int])

    /// The kinds of ``ended(_:from:why:)``.
    package enum EndKind: Sendable {
        case cancelled, dead, expired
    }

    /// What happened to a lane.
    package enum LaneChange: Sendable {
        case halted(error: String?)
        case drained
        case resumed
    }

    /// The event's kind.
    package var kind: EventKind {
        switch self {
        case .enqueued: .enqueued
        case .started: .started
        case .progress: .progress
        case .succeeded: .succeeded
        case .retrying(_, _, _, _, let timedOut): timedOut ? .timedOut : .failed
        case .timedOutForGood: .timedOut
        case .dead: .dead
        case .released: .released
        case .snoozed: .snoozed
        case .step: .step
        case .parked: .parked
        case .signal: .signal
        case .cancelling: .cancelling
        case .ended(let kind, _, _):
            switch kind {
            case .cancelled: .cancelled
            case .dead: .dead
            case .expired: .expired
            }
        case .retried: .retried
        case .updated: .updated
        case .lane: .lane
        case .batch: .batch
        case .tracking: .tracking
        case .group: .group
        case .workflow: .workflow
        case .subtree: .subtree
        case .tree: .tree
        case .schedule: .schedule
        case .triggerEmitted, .trigger: .trigger
        case .bulk: .bulk
        }
    }

    /// The data as the JSON object stored with the event.
    package var text: String {
        var data = JSONObjectBuilder()
        switch self {
        case .enqueued(let state, let runAt, let priority, let waitingFor, let lane, let schedule):
            data.add("state", string: state.rawValue)
            data.add("runAt", date: runAt.map(Date.init(timeIntervalSince1970:)))
            data.add("priority", int: priority)
            if waitingFor > 0 { data.add("waitingFor", int: waitingFor) }
            data.add("lane", string: lane)
            if let schedule {
                data.add("schedule", string: schedule.name)
                data.add("occurrence", date: Date(timeIntervalSince1970: schedule.occurrence))
            }
        case .started(let attempt, let worker):
            data.add("attempt", int: attempt)
            data.add("worker", string: worker)
        case .progress(let attempt, let fraction, let message, let rawData):
            data.add("attempt", int: attempt)
            data.add("fraction", number: fraction)
            data.add("message", string: message)
            data.add("data", raw: rawData)
        case .succeeded(let attempt, let reason, let rawResult):
            data.add("attempt", int: attempt)
            data.add("reason", string: reason)
            data.add("result", raw: rawResult)
        case .retrying(let attempt, let reason, let error, let retryAt, _):
            data.add("attempt", int: attempt)
            data.add("reason", string: reason)
            data.add("error", string: error)
            data.add("willRetry", bool: true)
            data.add("retryAt", date: Date(timeIntervalSince1970: retryAt))
        case .timedOutForGood(let attempt, let error):
            data.add("attempt", int: attempt)
            data.add("error", string: error)
            data.add("willRetry", bool: false)
        case .dead(let attempt, let reason, let error, let timedOut):
            data.add("attempt", int: attempt)
            data.add("reason", string: reason)
            data.add("error", string: error)
            if timedOut { data.add("timedOut", bool: true) }
        case .released(let attempt, let reason):
            data.add("attempt", int: attempt)
            data.add("reason", string: reason)
        case .snoozed(let attempt, let reason, let until, let snoozes, let checkpoint):
            data.add("attempt", int: attempt)
            data.add("reason", string: reason)
            data.add("until", date: Date(timeIntervalSince1970: until))
            data.add("snoozes", int: snoozes)
            data.add("checkpoint", bool: checkpoint)
        case .step(let attempt, let step):
            data.add("attempt", int: attempt)
            data.add("position", int: step.position)
            data.add("name", string: step.name)
            data.add("kind", string: step.kind.rawValue)
            data.add("wakeAt", date: step.wakeAt)
            if !step.children.isEmpty {
                data.add("children", raw: "[" + step.children.map(String.init).joined(separator: ",") + "]")
            }
            data.add("filter", string: step.filter)
            if step.cancelled { data.add("cancelled", bool: true) }
            if step.finishedAt != nil, !step.cancelled {
                data.add("finished", bool: true)
                // A step's result can be large and is kept with the step; a signal's payload is
                // what the sender gave, said once here. An event's payload is the emit's, which
                // may end many waits: kept with each step, not repeated in the feed.
                if step.kind == .signal { data.add("payload", raw: step.resultJSON) }
                if [.signal, .event].contains(step.kind), step.resultJSON == nil { data.add("timedOut", bool: true) }
            }
        case .parked(let attempt, let until, let awaiting, let calls):
            data.add("attempt", int: attempt)
            if calls.isEmpty {
                data.add("until", date: Date(timeIntervalSince1970: until))
            } else {
                data.add("calls", raw: "[" + calls.map(String.init).joined(separator: ",") + "]")
            }
            data.add("awaiting", string: awaiting)
        case .cancelling(let from):
            data.add("from", string: from)
        case .signal(let name, let signal, let woke):
            data.add("name", string: name)
            data.add("signal", int: Int(signal))
            data.add("woke", bool: woke)
        case .ended(let kind, let from, let why):
            data.add("from", string: from)
            data.add(kind == .dead ? "error" : "reason", string: why)
        case .retried(let from, let maxAttempts):
            data.add("from", string: from)
            data.add("maxAttempts", int: maxAttempts)
        case .updated(let by, let runAt, let priority):
            data.add("by", string: by)
            data.add("runAt", date: Date(timeIntervalSince1970: runAt))
            data.add("priority", int: priority)
        case .lane(let name, let change, let job):
            data.add("lane", string: name)
            switch change {
            case .halted(let error):
                data.add("state", string: "halted")
                data.add("error", string: error)
            case .drained: data.add("state", string: "drained")
            case .resumed: data.add("state", string: "resumed")
            }
            data.add("job", int: Int(job))
        case .batch(let name, let rawCounts, let completeJob, let successJob):
            data.add("name", string: name)
            data.add("counts", raw: rawCounts)
            data.add("completeJob", int: completeJob.map(Int.init))
            data.add("successJob", int: successJob.map(Int.init))
        case .tracking(let set, let round, let rawResults):
            data.add("set", string: set)
            data.add("round", int: round)
            data.add("results", raw: rawResults)
        case .group(let id, let name, let path, let kind, let state, let rawCounts, let rawFailures, let error):
            data.add("group", int: Int(id))
            data.add("name", string: name)
            data.add("path", string: path)
            data.add("kind", string: kind)
            data.add("state", string: state)
            data.add("counts", raw: rawCounts)
            data.add("failures", raw: rawFailures)
            data.add("error", string: error)
        case .workflow(let name, let state, let rawCounts, let error):
            data.add("name", string: name)
            data.add("state", string: state)
            data.add("counts", raw: rawCounts)
            data.add("error", string: error)
        case .subtree(let group, let node, let path, let job, let state, let rawCounts, let rawFailures, let error):
            Self.addSubtree(
                to: &data, group: group, node: node, path: path, job: job, state: state, rawCounts: rawCounts,
                rawFailures: rawFailures, error: error)
        case .tree(
            let tree, let group, let node, let path, let job, let state, let rawCounts, let rawFailures, let error):
            // A tree's end says what its root subtree's says, after the tree's id.
            data.add("tree", int: Int(tree))
            Self.addSubtree(
                to: &data, group: group, node: node, path: path, job: job, state: state, rawCounts: rawCounts,
                rawFailures: rawFailures, error: error)
        case .schedule(let name, let change):
            data.add("schedule", string: name)
            data.add("change", string: change)
        case .triggerEmitted(let event, let rawJobs, let dedupe):
            data.add("event", string: event)
            data.add("change", string: "emitted")
            data.add("jobs", raw: rawJobs)
            data.add("dedupe", string: dedupe)
        case .trigger(let event, let task, let change):
            data.add("event", string: event)
            data.add("task", string: task)
            data.add("change", string: change)
        case .bulk(let action, let filter, let matched, let changed, let skipped):
            data.add("action", string: action)
            data.add("filter", string: filter)
            data.add("matched", int: matched)
            data.add("changed", int: changed)
            var reasons = JSONObjectBuilder()
            for (reason, count) in skipped.sorted(by: { $0.key < $1.key }) { reasons.add(reason, int: count) }
            data.add("skipped", raw: reasons.text)
        }
        return data.text
    }

    private static func addSubtree(
        to data: inout JSONObjectBuilder, group: Int64, node: String, path: String, job: JobID?, state: String,
        rawCounts: String?, rawFailures: String?, error: String?
    ) {
        data.add("group", int: Int(group))
        data.add("node", string: node)
        data.add("path", string: path)
        data.add("job", int: job.map(Int.init))
        data.add("state", string: state)
        data.add("counts", raw: rawCounts)
        data.add("failures", raw: rawFailures)
        data.add("error", string: error)
    }

    /// The data rendered once, for a writer that appends many events with the same data (a
    /// tree's jobs enqueued together).
    package var rendered: RenderedEventData { RenderedEventData(kind: kind, text: text) }
}

/// An ``EventData`` rendered: its kind and its JSON text. Only ``EventData/rendered`` makes one.
package struct RenderedEventData: Sendable {
    package let kind: EventKind
    package let text: String

    fileprivate init(kind: EventKind, text: String) {
        self.kind = kind
        self.text = text
    }
}
