import CSQLiteTuning
import JobQCore
import JobQSQL

extension JobQueue {
    /// Sets SQLite's process-wide configuration for jobq's workload. Call it first thing in
    /// `main`, before anything in the process opens an SQLite database: SQLite reads these
    /// settings once, when it initializes, and a later call changes nothing (it returns false).
    /// The `jobq` command line does this at start-up.
    ///
    /// ```swift
    /// @main struct App {
    ///     static func main() async throws {
    ///         JobQueue.tuneSQLiteBeforeFirstUse()
    ///         let queue = try JobQueue(path: "jobs.sqlite")
    ///         // ...
    ///     }
    /// }
    /// ```
    ///
    /// What it changes, for every SQLite database of the process (GRDB's and any other):
    /// - memory statistics off: they put a process-wide mutex around every SQLite allocation;
    /// - no bulk allocation per page cache. SQLite gives every cache a first block of 20 pages
    ///   (~86 KiB) and writes a header into each; every temporary table a statement makes (an
    ///   `IN (SELECT ...)` list, `RETURNING` rows) has a cache of its own, so a claim made and
    ///   freed several such blocks, each fresh memory from the OS once the allocator had given
    ///   the last one back: 21 page faults each. Pages are then allocated one at a time, as
    ///   caches need them, which halves the time of a claim's UPDATE and of an idle worker's
    ///   check for claimable work (`docs/performance.md`).
    ///
    /// Safe to skip: jobq is correct without it, only slower to pick up a lone job.
    @discardableResult
    public static func tuneSQLiteBeforeFirstUse() -> Bool {
        jobq_sqlite_tune_process() == 0
    }
}
