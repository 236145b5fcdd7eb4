import Foundation
import GRDB
import Testing

@testable import JobQCore
@testable import JobQSQL
@testable import JobQSQLite

/// WriteFailureTests on the SQLite store only (a file, a restart, a second connection, SQLite's own locks);
/// the tests every store passes are in StoreConformance/.
extension WriteFailureTests {
    @Test func outcomesWrittenWhileTheStoreIsLockedAreRecordedOnceItIsFree() async throws {
        let store = try TemporaryStore()
        let queue = try store.open()
        let jobs = try await queue.enqueue(
            contentsOf: (0..<12).map { _ in
                // Three seconds each: four of them run together long enough for a loaded machine's
                // test task to see it (at half a second, all twelve could be done first).
                try JobRequest(executor: "sleep", payloadJSON: #"{"seconds": 3}"#)
            })
        let pool = WorkerPool(queue: queue, concurrency: 4, executors: BuiltinExecutors.all, options: quickOptions())
        let running = Task { try await pool.run() }
        try await eventually(.seconds(30), "jobs to run") {
            try await queue.jobs(state: .running, limit: 20).count >= 4
        }
        // Another process takes the write lock and keeps it past the store's busy timeout, the
        // way a long `jobq prune` or a large import would: completions written meanwhile fail.
        let holdFor = SQLiteStore.busyTimeout + 2
        let holder = onThread {
            let other = try DatabaseQueue(path: store.path)
            try other.inDatabase { db in
                try db.execute(sql: "BEGIN IMMEDIATE")
                Thread.sleep(forTimeInterval: holdFor)
                try db.execute(sql: "COMMIT")
            }
        }
        try await holder.value
        try await within(.seconds(60), "the pool to finish once the lock is free") { try await running.value }
        let all = try await queue.jobs(limit: 100)
        #expect(all.count == jobs.count)
        #expect(
            all.allSatisfy { $0.state == .succeeded }, "\(Dictionary(grouping: all, by: \.state).mapValues(\.count))")
        #expect(all.allSatisfy { $0.attempt == 1 }, "each job ran once")
        #expect(pool.statistics.succeeded == jobs.count)
    }
}
