#if Postgres
    import Foundation
    import Logging
    import PostgresNIO

    /// The CPU time (user + system, seconds) a PostgreSQL server on this machine has used: its
    /// postmaster and every process it started, live or ended, from /proc. A drain's jobs/s says
    /// how fast the machine went; the server's CPU per job says what a job costs the server,
    /// whatever else ran meanwhile (on two cores the server and the workers share them).
    ///
    /// The postmaster is found as the parent of the bench's own backend. Its children's CPU is
    /// theirs while they run (`/proc/PID/stat` utime + stime) and is added to the postmaster's
    /// `cutime` + `cstime` once it has reaped them, so a backend that ended between two reads (a
    /// worker's connection closed) is counted once. Nil when the server is not on this machine
    /// (or /proc cannot be read): the rows that need it are left out and say so.
    ///
    /// ```swift
    /// let server = try await ServerCPU(connection, logger: logger)
    /// let before = server?.seconds()
    /// ```
    struct ServerCPU {
        let postmaster: pid_t

        init?(_ connection: PostgresConnection, logger: Logger) async throws {
            let rows = try await connection.query("SELECT pg_backend_pid()", logger: logger).collect()
            guard let backend = try rows.first?.decode(Int32.self),
                let stat = Self.stat(backend), stat.parent > 1,
                Self.stat(stat.parent) != nil
            else { return nil }
            postmaster = stat.parent
        }

        /// The server's CPU so far, in seconds.
        func seconds() -> Double {
            var ticks = 0.0
            if let own = Self.stat(postmaster) { ticks += own.ticks + own.childrenTicks }
            let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
            for entry in entries {
                guard let pid = pid_t(entry), pid != postmaster, let stat = Self.stat(pid), stat.parent == postmaster
                else { continue }
                ticks += stat.ticks
            }
            return ticks / Double(sysconf(Int32(_SC_CLK_TCK)))
        }

        /// A process's parent, its own CPU ticks, and those of its reaped children.
        private static func stat(_ pid: pid_t) -> (parent: pid_t, ticks: Double, childrenTicks: Double)? {
            guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
                let end = text.lastIndex(of: ")")
            else { return nil }
            // Fields after the command name (which may hold spaces and parentheses): ppid is
            // field 4, utime 14, stime 15, cutime 16, cstime 17.
            let fields = text[text.index(after: end)...].split(separator: " ")
            guard fields.count > 14, let parent = pid_t(fields[1]), let user = Double(fields[11]),
                let system = Double(fields[12]), let childrenUser = Double(fields[13]),
                let childrenSystem = Double(fields[14])
            else { return nil }
            return (parent, user + system, childrenUser + childrenSystem)
        }
    }
#endif
