import Foundation
import JobQCore

/// One self-contained job (``JobRequest/isSelfContained``: no unique key, lane, dependency,
/// batch, partition or expiry) as an enqueue stores it: its columns and its `enqueued` event's
/// data. Its enqueue reads nothing and changes no other row, so the job it returns is made from
/// what was sent (``job(id:createdAt:)``) instead of read back: the same values, minus a
/// round of decoding every column.
package struct SelfContainedJobRow: Sendable {
    package let queue: String
    package let executor: String
    /// Minified as both stores keep it (``JSONText/minified(_:)``, what SQLite's `json()` stores).
    package let payload: String
    package let priority: Int
    package let state: JobState
    package let maxAttempts: Int
    package let runAt: Double
    package let timeout: Double?
    package let name: String?
    package let trace: String?
    /// Its `enqueued` event's data.
    package let event: RenderedEventData
    package var eventData: String { event.text }

    package init(_ request: JobRequest, now: Double) {
        let options = request.options
        queue = options.queue
        executor = request.executor
        payload = JSONText.minified(request.payloadJSON)
        priority = options.priority
        runAt = options.runAt?.timeIntervalSince1970 ?? now
        state = runAt > now ? .scheduled : .ready
        maxAttempts = options.maxAttempts
        timeout = options.timeout?.inSeconds
        name = options.name
        trace = request.traceContextJSON
        event = EventData.enqueued(state: state, runAt: runAt, priority: priority).rendered
    }

    /// The job as the store now holds it: its row as a fresh insert leaves it (the conformance
    /// suite compares it with the stored job on both stores).
    package func job(id: Int64, createdAt: Double) -> Job {
        Job(
            inserted: id, queue: queue, executor: executor, state: state, priority: priority, payloadJSON: payload,
            maxAttempts: maxAttempts, runAt: runAt, timeout: timeout, createdAt: createdAt, name: name)
    }
}

extension StoreSQL {
    /// Inserts a self-contained job (``SelfContainedJobRow``) in the transaction `db`, with
    /// its `enqueued` event: one INSERT of the columns it sets, nothing read back but its id
    /// (on SQLite, where a RETURNING clause opens a temporary table per statement, not even
    /// that: the connection's last row id).
    static func insertSelfContained(_ request: JobRequest, db: some SQLTransaction, now: Double) throws -> Job {
        let row = SelfContainedJobRow(request, now: now)
        let insert = try db.statement(sql: insertSelfContainedSQL[db.dialect])
        let event = NewJobEvent(row.event, db.dialect)
        typealias P = InsertSelfContained
        insert.bind(P.queue, row.queue)
        insert.bind(P.executor, row.executor)
        insert.bind(P.payload, row.payload)
        insert.bind(P.priority, row.priority)
        insert.bind(P.state, row.state.rawValue)
        insert.bind(P.maxAttempts, row.maxAttempts)
        insert.bind(P.runAt, row.runAt)
        insert.bind(P.timeout, row.timeout)
        insert.bind(P.createdAt, now)
        insert.bind(P.name, row.name)
        insert.bind(P.traceContext, row.trace)
        event.bind(to: insert, at: P.enqueuedData)
        let returned = try insert.step()
        let id = returned ? insert.int64(0) : db.lastInsertedRowID
        insert.reset()
        guard let id else {
            throw JobQueueError.storeUnavailable("inserting a job returned no id; nothing was enqueued, retry")
        }
        event.append(to: db, at: now, job: id, queue: row.queue, executor: row.executor, batch: nil, workflow: nil)
        return row.job(id: id, createdAt: now)
    }

    /// The parameters of a self-contained job's row.
    enum InsertSelfContained: Int32, SQLParameter {
        case queue = 1
        case executor, payload, priority, state, maxAttempts, runAt, timeout, createdAt, name, traceContext,
            enqueuedData
    }

    /// The payload is bound minified and checked by the table (SQLite's CHECK, PostgreSQL's
    /// json type); SQLite returns nothing (``SQLTransaction/lastInsertedRowID``).
    static let insertSelfContainedSQL = DialectSQL { d in
        typealias P = InsertSelfContained
        return jobInsertSQL(
            d,
            [
                "queue": "\(P.queue)", "executor": "\(P.executor)",
                "payload": d == .sqlite ? "\(P.payload)" : d.json("\(P.payload)"), "priority": "\(P.priority)",
                "state": "\(P.state)", "max_attempts": "\(P.maxAttempts)", "run_at": "\(P.runAt)",
                "timeout": "\(P.timeout)", "created_at": "\(P.createdAt)", "name": "\(P.name)",
                "trace_context": "\(P.traceContext)"
            ], enqueuedData: P.enqueuedData, returning: d == .sqlite ? nil : "id")
    }
}
