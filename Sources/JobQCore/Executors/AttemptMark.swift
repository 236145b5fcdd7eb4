import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The variable every process of a command's attempt inherits,
/// `JOBQ_ATTEMPT_MARK=PID.START.UUID`: the attempt's own id, and the worker process that started
/// it (its pid and the time it started, so that another process given the same pid is not taken
/// for it).
///
/// A command's descendants that leave its process group are found by it when the attempt ends
/// (``ChildProcess/endGroup(grace:)``). And a command whose worker was killed outright (SIGKILL,
/// the OOM killer), which nothing ended, is found by it before this machine starts another
/// command (``endCommandsOfGoneWorkers()``): by then the job may be running again, and its old
/// command must not run beside it. Linux only (it reads `/proc`).
package enum AttemptMark {
    /// The variable's name.
    static let name = "JOBQ_ATTEMPT_MARK"

    /// `NAME=VALUE` for a new attempt of this process.
    static func make() -> String {
        "\(name)=\(owner).\(UUID().uuidString)"
    }

    /// This process as marks name it: `PID.START`.
    private static let owner: String = {
        let process = getpid()
        return "\(process).\(startTime(of: process) ?? 0)"
    }()

    /// Live processes (not zombies: those have no environment) and the mark each carries.
    static func markedProcesses() -> [(process: pid_t, mark: String)] {
        #if os(Linux)
            let prefix = Array("\(name)=".utf8)
            let own = getpid()
            guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return [] }
            var found: [(pid_t, String)] = []
            for entry in entries {
                guard let process = pid_t(entry), process != own else { continue }
                let entries = environment(of: process)
                // Entries are NUL-separated `NAME=VALUE`s.
                if let mark = entries.split(separator: 0).first(where: { $0.starts(with: prefix) }) {
                    found.append((process, String(decoding: mark, as: UTF8.self)))
                }
            }
            return found
        #else
            return []
        #endif
    }

    /// Kills (SIGKILL) every process whose mark names a worker that is gone, with no grace: its
    /// job's lease ran or is running out, and the job may already be running again. Returns the
    /// processes killed. It reads every process's environment: about 0.1 ms with 70 processes
    /// on the machine, paid before every command (a `true` command's run took 10% longer; a
    /// throttle would miss a worker killed just before its lease ran out, late to renew it).
    @discardableResult
    package static func endCommandsOfGoneWorkers() -> [pid_t] {
        var ended: [pid_t] = []
        var alive: [String: Bool] = [:]
        for (process, mark) in markedProcesses() {
            guard let owner = owner(of: mark) else { continue }
            let isAlive = alive[owner] ?? isRunning(owner)
            alive[owner] = isAlive
            if !isAlive, kill(process, SIGKILL) == 0 { ended.append(process) }
        }
        return ended
    }

    /// `PID.START` of a `NAME=PID.START.UUID` mark; nil for a mark of another form (a mark of
    /// an older jobq, `NAME=UUID`, names no worker and is left alone).
    private static func owner(of mark: String) -> String? {
        let parts = mark.dropFirst(name.count + 1).split(separator: ".")
        guard parts.count == 3, pid_t(parts[0]) != nil, UInt64(parts[1]) != nil else { return nil }
        return "\(parts[0]).\(parts[1])"
    }

    /// Whether the process `PID.START` names still runs: the pid exists, is not a zombie, and
    /// started at that time.
    private static func isRunning(_ owner: String) -> Bool {
        let parts = owner.split(separator: ".")
        guard let process = pid_t(parts[0]), let fields = statFields(of: process) else { return false }
        return fields.first != "Z" && fields.first != "X" && fields.count > 19 && fields[19] == parts[1]
    }

    /// When `process` started, in clock ticks since boot (`/proc/PID/stat`, field 22).
    private static func startTime(of process: pid_t) -> UInt64? {
        guard let fields = statFields(of: process), fields.count > 19 else { return nil }
        return UInt64(fields[19])
    }

    /// The fields of `/proc/PID/stat` after the command name (which may hold spaces): the
    /// state first.
    private static func statFields(of process: pid_t) -> [Substring]? {
        guard let stat = try? String(contentsOfFile: "/proc/\(process)/stat", encoding: .utf8),
            let end = stat.lastIndex(of: ")")
        else { return nil }
        return stat[stat.index(after: end)...].split(separator: " ")
    }

    /// The first MiB of `/proc/PID/environ` (empty when unreadable: another user's process).
    private static func environment(of process: pid_t) -> [UInt8] {
        let descriptor = open("/proc/\(process)/environ", O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return [] }
        defer { close(descriptor) }
        var environment: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        while environment.count < 1 << 20 {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count <= 0 { break }
            environment += buffer[0..<count]
        }
        return environment
    }
}
