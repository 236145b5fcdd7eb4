import JobQCore

extension StoreSQL {
    /// `INSERT INTO table (column, ...) VALUES (value, ...)` from one list of columns with
    /// their values, so that a column and its value are written side by side.
    package static func insertSQL(
        _ table: String, _ values: KeyValuePairs<String, String>, returning: String? = nil
    ) -> String {
        insertSQL(table, Array(values), returning: returning)
    }

    private static func insertSQL(_ table: String, _ values: [(key: String, value: String)], returning: String?)
        -> String
    {
        let columns = values.map(\.key).joined(separator: ", ")
        let row = values.map(\.value).joined(separator: ", ")
        return "INSERT INTO \(table) (\(columns)) VALUES (\(row))" + (returning.map { " RETURNING \($0)" } ?? "")
    }

    /// A job's INSERT in `dialect`: `values`, and where the job's row keeps its `enqueued` event
    /// (SQLite), the event's data at `enqueuedData` (bound by ``NewJobEvent/bind(to:at:)``).
    static func jobInsertSQL(
        _ dialect: SQLDialect, _ values: KeyValuePairs<String, String>, enqueuedData: some SQLParameter,
        returning: String? = nil
    ) -> String {
        var columns = Array(values)
        if dialect.keepsEnqueuedEventInJobRow { columns.append((key: "enqueued_data", value: "\(enqueuedData)")) }
        return insertSQL("jobq_jobs", columns, returning: returning)
    }

    /// A new job's `enqueued` event: bound into the job's INSERT where the row keeps it
    /// (``SQLDialect/keepsEnqueuedEventInJobRow``), appended as an event row once the job has its
    /// id elsewhere. Every insert of a job goes through here, so the event is never written twice
    /// or not at all.
    struct NewJobEvent {
        let data: RenderedEventData
        let dialect: SQLDialect

        init(_ data: RenderedEventData, _ dialect: SQLDialect) {
            self.data = data
            self.dialect = dialect
        }

        /// Before the INSERT runs: its `enqueued_data` parameter, where there is one.
        func bind(to statement: some SQLStatement, at parameter: some SQLParameter) {
            if dialect.keepsEnqueuedEventInJobRow { statement.bind(parameter, data.text) }
        }

        /// After the INSERT: the event row, where the store writes one, at the job's creation
        /// time `now` (whatever time the rest of the write is stamped with).
        func append(
            to db: some SQLTransaction, at now: Double, job: JobID, queue: String, executor: String, batch: String?,
            workflow: WorkflowID?
        ) {
            guard !dialect.keepsEnqueuedEventInJobRow else { return }
            db.outbox.append(
                job: job, kind: data.kind, queue: queue, executor: executor, batch: batch, data: data.text,
                createdAt: now, workflow: workflow)
        }
    }
}
