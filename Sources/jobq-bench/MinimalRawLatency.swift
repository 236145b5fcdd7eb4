import Foundation
import GRDBSQLite
import JobQCommandLine

#if canImport(Glibc)
    import Glibc
#endif

/// The latency limit beside jobq's: the smallest durable queue SQLite can be, across two
/// processes on the same disk, woken by the OS (inotify reports SQLite's own WAL writes; the
/// waiter then reads `PRAGMA data_version` every 20 µs until the commit is published, a cost
/// jobq's announcements after each commit spare it). The producer commits one job and waits until it sees it done; the
/// worker, idle until woken, claims it in one transaction and completes it in another (a claim
/// that is durable before the work runs, as in any queue that survives a crash). No events, no
/// leases, no JSON, no threads: the C API and blocking system calls only. Linux only (inotify).
///
/// What it keeps of jobq's promises is what any crash-safe queue needs: three commits per job
/// (enqueue, claim, completion). On an idle virtual machine each commit costs several times
/// what it costs warm, which is most of any SQLite queue's latency.
enum MinimalRawLatency {
    /// One producer's measurements, in milliseconds: the round trip (commit to seeing it done)
    /// and one way (the enqueue's commit to the completion's, as jobq's own one-way row).
    struct Samples {
        var roundTrip: [Double] = []
        var oneWay: [Double] = []
    }

    #if os(Linux)
        /// The producer: starts the worker as a child (`jobq bench --minimal-raw-worker PATH`),
        /// then times `count` jobs one after the other, idle 5 ms between them like jobq's rows.
        static func measure(path: String, count: Int) async throws -> Samples {
            let connection = try Connection(path: path, create: true)
            let watch = try WALWatch(databasePath: path)
            let child = try BenchChild(.bench, ["--minimal-raw-worker", path, "--latency-jobs", String(count)])
            defer { child.terminate() }
            // Wait for the worker's "ready" row (id 0), so that it is idle before the first job.
            let readyBy = ContinuousClock.now + .seconds(10)
            while try connection.state(of: 0) == nil {
                guard ContinuousClock.now < readyBy else {
                    throw CLIError.failure("bench: the minimal raw worker did not start")
                }
                try await Task.sleep(for: .milliseconds(5))
            }
            var samples = Samples()
            for index in 1...count {
                let start = ContinuousClock.now
                let id = try connection.enqueue(index: index)
                var version = try connection.dataVersion()
                let deadline = ContinuousClock.now + .seconds(10)
                while try connection.state(of: id) != 2 {
                    guard ContinuousClock.now < deadline else {
                        throw CLIError.failure("bench: the minimal raw worker did not finish job \(id) within 10 s")
                    }
                    version = try watch.waitForCommit(on: connection, after: version)
                }
                samples.roundTrip.append((ContinuousClock.now - start).inSeconds * 1000)
                try await Task.sleep(for: .milliseconds(5))
            }
            let (status, _) = await child.wait()
            guard status == 0 else { throw CLIError.failure("bench: the minimal raw worker exited \(status)") }
            samples.oneWay = try connection.oneWayMilliseconds()
            return samples
        }

        /// The worker (a child process): marks itself ready, then claims and completes `count` jobs,
        /// each as soon as the OS reports the producer's commit.
        static func runWorker(path: String, count: Int) throws {
            let connection = try Connection(path: path, create: false)
            let watch = try WALWatch(databasePath: path)
            var version = try connection.dataVersion()
            try connection.markReady()
            var done = 0
            while done < count {
                if let (id, payload) = try connection.claim() {
                    try connection.complete(id: id, payload: payload)
                    done += 1
                } else {
                    version = try watch.waitForCommit(on: connection, after: version)
                }
            }
        }

        /// The minimal queue's connection: its table, and the statements of each step.
        private final class Connection {
            private let connection: RawConnection
            private var statements: [String: OpaquePointer] = [:]

            init(path: String, create: Bool) throws {
                connection = try RawConnection(path: path, label: "minimal raw latency", create: create)
                if create {
                    try exec(
                        """
                        CREATE TABLE IF NOT EXISTS q (id INTEGER PRIMARY KEY, state INTEGER NOT NULL, payload TEXT NOT NULL, result TEXT,
                            created REAL, finished REAL);
                        CREATE INDEX IF NOT EXISTS q_ready ON q (state, id);
                        """)
                }
            }

            deinit {
                for statement in statements.values { sqlite3_finalize(statement) }
            }

            private func exec(_ sql: String) throws { try connection.exec(sql) }

            /// A prepared statement, kept for the connection's life; reset after each use by the caller.
            private func statement(_ sql: String) throws -> OpaquePointer {
                if let statement = statements[sql] { return statement }
                let statement = try connection.prepare(sql)
                statements[sql] = statement
                return statement
            }

            private static var now: Double { Date().timeIntervalSince1970 }

            func markReady() throws {
                try exec("INSERT INTO q (id, state, payload) VALUES (0, 2, '{}')")
            }

            func enqueue(index: Int) throws -> Int64 {
                try exec("BEGIN IMMEDIATE")
                let insert = try statement("INSERT INTO q (state, payload, created) VALUES (0, ?, ?) RETURNING id")
                sqlite3_bind_text(insert, 1, #"{"a":\#(index),"b":1}"#, -1, sqliteTransient)
                sqlite3_bind_double(insert, 2, Self.now)
                guard sqlite3_step(insert) == SQLITE_ROW else {
                    throw CLIError.failure("minimal raw latency: insert failed")
                }
                let id = sqlite3_column_int64(insert, 0)
                sqlite3_reset(insert)
                try exec("COMMIT")
                return id
            }

            /// Claims the oldest ready job in a transaction of its own; nil when there is none.
            func claim() throws -> (Int64, String)? {
                try exec("BEGIN IMMEDIATE")
                let claim = try statement(
                    "UPDATE q SET state = 1 WHERE id IN (SELECT id FROM q WHERE state = 0 ORDER BY id LIMIT 1) RETURNING id, payload"
                )
                var claimed: (Int64, String)?
                if sqlite3_step(claim) == SQLITE_ROW {
                    claimed = (sqlite3_column_int64(claim, 0), String(cString: sqlite3_column_text(claim, 1)))
                }
                sqlite3_reset(claim)
                try exec("COMMIT")
                return claimed
            }

            func complete(id: Int64, payload: String) throws {
                try exec("BEGIN IMMEDIATE")
                let complete = try statement("UPDATE q SET state = 2, result = ?, finished = ? WHERE id = ?")
                sqlite3_bind_text(complete, 1, #"{"sum":\#(payload.utf8.count)}"#, -1, sqliteTransient)
                sqlite3_bind_double(complete, 2, Self.now)
                sqlite3_bind_int64(complete, 3, id)
                _ = sqlite3_step(complete)
                sqlite3_reset(complete)
                try exec("COMMIT")
            }

            func state(of id: Int64) throws -> Int? {
                let select = try statement("SELECT state FROM q WHERE id = ?")
                defer { sqlite3_reset(select) }
                sqlite3_bind_int64(select, 1, id)
                return sqlite3_step(select) == SQLITE_ROW ? Int(sqlite3_column_int64(select, 0)) : nil
            }

            /// `PRAGMA data_version`: moves when another connection commits.
            func dataVersion() throws -> Int64 {
                let pragma = try statement("PRAGMA data_version")
                defer { sqlite3_reset(pragma) }
                guard sqlite3_step(pragma) == SQLITE_ROW else {
                    throw CLIError.failure("minimal raw latency: no data_version")
                }
                return sqlite3_column_int64(pragma, 0)
            }

            func oneWayMilliseconds() throws -> [Double] {
                let select = try statement(
                    "SELECT (finished - created) * 1000 FROM q WHERE id > 0 AND state = 2 ORDER BY id")
                defer { sqlite3_reset(select) }
                var values: [Double] = []
                while sqlite3_step(select) == SQLITE_ROW { values.append(sqlite3_column_double(select, 0)) }
                return values
            }
        }

        /// inotify on the database's directory (the bench's own, where only this store is written
        /// meanwhile), read with blocking calls.
        private final class WALWatch {
            private let descriptor: Int32

            init(databasePath: String) throws {
                let url = URL(fileURLWithPath: databasePath)
                descriptor = inotify_init1(Int32(IN_CLOEXEC))
                guard descriptor >= 0,
                    inotify_add_watch(descriptor, url.deletingLastPathComponent().path, UInt32(IN_MODIFY)) >= 0
                else {
                    throw CLIError.failure("minimal raw latency: inotify is not available")
                }
            }

            deinit { close(descriptor) }

            /// Returns the new data_version once another connection's commit is visible: after a
            /// reported write, it looks until the commit is published (the writer publishes it just
            /// after its last WAL write), then returns; a second without any report returns too.
            func waitForCommit(on connection: Connection, after version: Int64) throws -> Int64 {
                var pollDescriptor = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
                guard poll(&pollDescriptor, 1, 1000) > 0 else { return try connection.dataVersion() }
                var buffer = [UInt8](repeating: 0, count: 4096)
                _ = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
                for _ in 0..<200 {
                    let current = try connection.dataVersion()
                    if current != version { return current }
                    usleep(20)
                }
                return version
            }
        }
    #endif
}
