import JobQCore

/// Keeps new jobs out of a store a copy is filling: from the copy's first write until its check
/// passes, a trigger on the destination's jobs refuses every insert but the copy's own, with the
/// message workers get there. An enqueue meanwhile would take an id the copy is about to write
/// (PostgreSQL's sequence moves on only when the copy ends), and would run before its
/// dependencies, workflow or batch were copied.
///
/// The copy's own inserts pass because each of its transactions that writes jobs holds a mark
/// row (`copy_writing`) it deletes before it commits: visible to that transaction alone.
///
/// ```swift
/// try CopyGuard.install(db)                         // as the copy marks the destination
/// try CopyGuard.writing(db) { try insert(rows) }    // each page of jobs
/// try CopyGuard.remove(db)                          // once the copy is verified
/// ```
enum CopyGuard {
    /// The mark a copy's transaction holds while it writes jobs.
    static let writing = "copy_writing"

    /// The refusal an enqueue into the store meets.
    static let refusal =
        "this store is being filled by `jobq copy`, which has not finished: not all of its jobs are here yet, and "
        + "none can be added. Run the same copy again to finish it (it goes on from where it stopped), then "
        + "enqueue and start workers"

    static func install(_ db: some SQLTransaction) throws {
        switch db.dialect {
        case .sqlite:
            try db.execute(
                sql: """
                    CREATE TRIGGER IF NOT EXISTS jobq_copy_guard BEFORE INSERT ON jobq_jobs
                    WHEN NOT EXISTS (SELECT 1 FROM jobq_store_settings WHERE name = '\(writing)')
                    BEGIN SELECT RAISE(ABORT, '\(refusal.replacingOccurrences(of: "'", with: "''"))'); END
                    """)
        case .postgres:
            try db.execute(
                sql: """
                    CREATE OR REPLACE FUNCTION jobq_refuse_while_filled() RETURNS trigger LANGUAGE plpgsql AS $$
                    BEGIN
                        IF NOT EXISTS (SELECT 1 FROM jobq_store_settings WHERE name = '\(writing)') THEN
                            RAISE EXCEPTION USING ERRCODE = '55000', MESSAGE = '\(refusal.replacingOccurrences(of: "'", with: "''"))';
                        END IF;
                        RETURN NEW;
                    END
                    $$
                    """)
            try db.execute(sql: "DROP TRIGGER IF EXISTS jobq_copy_guard ON jobq_jobs")
            try db.execute(
                sql: """
                    CREATE TRIGGER jobq_copy_guard BEFORE INSERT ON jobq_jobs
                    FOR EACH ROW EXECUTE FUNCTION jobq_refuse_while_filled()
                    """)
        }
    }

    /// Runs `body`, which inserts jobs for the copy, holding the mark that lets them in.
    static func writing<T>(_ db: some SQLTransaction, _ body: () throws -> T) throws -> T {
        try CopyPlan.Setting.set(db, [(writing, 1)])
        let result = try body()
        try db.execute(sql: "DELETE FROM jobq_store_settings WHERE name = ?", arguments: [writing])
        return result
    }

    static func remove(_ db: some SQLTransaction) throws {
        switch db.dialect {
        case .sqlite:
            try db.execute(sql: "DROP TRIGGER IF EXISTS jobq_copy_guard")
        case .postgres:
            try db.execute(sql: "DROP TRIGGER IF EXISTS jobq_copy_guard ON jobq_jobs")
            try db.execute(sql: "DROP FUNCTION IF EXISTS jobq_refuse_while_filled()")
        }
    }
}
