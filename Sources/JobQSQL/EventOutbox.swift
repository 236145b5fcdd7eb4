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

    package init() {}

    var isEmpty: Bool { rows.isEmpty }

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
    func write(_ db: some SQLTransaction) throws {
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
        rows.removeAll(keepingCapacity: true)
    }

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
}

extension SharedSQL {
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
    /// through it with one time: the functions that write a state change's events take one.
    struct PendingEvents {
        let now: Double
        private let outbox: EventOutbox

        init(_ db: some SQLTransaction, now: Double) {
            self.now = now
            self.outbox = db.outbox
        }

        mutating func append(
            _ data: EventData, job: JobID?, queue: String?, executor: String?, batch: String?,
            workflow: WorkflowID? = nil
        ) {
            append(data.rendered, job: job, queue: queue, executor: executor, batch: batch, workflow: workflow)
        }

        /// The same with data rendered once for many events.
        mutating func append(
            _ data: RenderedEventData, job: JobID?, queue: String?, executor: String?, batch: String?,
            workflow: WorkflowID? = nil
        ) {
            outbox.append(
                job: job, kind: data.kind, queue: queue, executor: executor, batch: batch, data: data.text,
                createdAt: now, workflow: workflow)
        }

        /// The `started` event of a claimed attempt.
        mutating func append(startedOf job: ClaimedJob, workerID: String) {
            append(
                .started(attempt: job.attempt, worker: workerID), job: job.id, queue: job.queue,
                executor: job.executor, batch: job.batch, workflow: job.workflowID)
        }
    }
}
