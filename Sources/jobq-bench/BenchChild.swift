import Foundation
import JobQCommandLine
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Runs a `jobq` worker (or the bench itself, for the minimal raw queue's worker) as a child
/// process for the cross-process workloads, and follows its peak resident memory.
struct BenchChild {
    /// Which program a child runs.
    enum Program {
        /// The `jobq` binary (`--jobq`, else the one next to this bench).
        case jobq
        /// This bench binary.
        case bench
    }

    let pid: pid_t

    /// `--jobq`, when given.
    static let jobqOverride = Mutex<String?>(nil)

    static var ownExecutable: String {
        #if os(Linux)
            if let path = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") { return path }
        #endif
        return CommandLine.arguments[0]
    }

    static func executable(_ program: Program) throws -> String {
        switch program {
        case .bench:
            return ownExecutable
        case .jobq:
            if let given = jobqOverride.withLock({ $0 }) {
                guard FileManager.default.isExecutableFile(atPath: given) else {
                    throw CLIError.usage("--jobq \(given): not an executable file; give the path of a built jobq")
                }
                return given
            }
            let sibling = URL(fileURLWithPath: ownExecutable).deletingLastPathComponent().appendingPathComponent("jobq")
                .path
            guard FileManager.default.isExecutableFile(atPath: sibling) else {
                throw CLIError.usage(
                    "the cross-process workloads run `jobq work`, and there is no jobq next to this bench (\(sibling)); "
                        + "build it with the same configuration and traits (`swift build -c release --product jobq`) or pass --jobq PATH"
                )
            }
            return sibling
        }
    }

    /// Starts `jobq ARGUMENTS...`.
    init(_ arguments: [String]) throws {
        try self.init(.jobq, arguments)
    }

    init(_ program: Program, _ arguments: [String]) throws {
        let executable = try Self.executable(program)
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var environment = ProcessInfo.processInfo.environment
        environment["JOBQ_LOG_LEVEL"] = "error"
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for pointer in envp { free(pointer) } }
        #if canImport(Glibc)
            var actions = posix_spawn_file_actions_t()
        #else
            var actions: posix_spawn_file_actions_t? = nil
        #endif
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        var pid: pid_t = 0
        let result = posix_spawn(&pid, executable, &actions, nil, argv, envp)
        guard result == 0 else {
            throw CLIError.failure("bench: cannot start \(executable): \(String(cString: strerror(result)))")
        }
        self.pid = pid
    }

    /// Waits for the child on a thread of its own. Returns its exit status and peak RSS in bytes.
    ///
    /// On Linux the peak is the child's own high-water mark (`VmHWM` in /proc, read every 10 ms
    /// until it exits), not wait4's `ru_maxrss`: posix_spawn starts the child on the parent's
    /// memory (vfork), and exec folds that memory's peak into the child's `ru_maxrss`, so it
    /// reported the bench's own peak (141 MiB) rather than the worker's (about 50 MiB).
    func wait() async -> (status: Int32, peakRSS: Int) {
        let (status, peak, _) = await waitMeasured()
        return (status, peak)
    }

    /// ``wait()``, and the CPU time (user + system, seconds) the child used, from wait4.
    func waitMeasured() async -> (status: Int32, peakRSS: Int, cpuSeconds: Double) {
        let pid = self.pid
        return await withCheckedContinuation { continuation in
            Thread {
                var status: Int32 = 0
                var usage = rusage()
                #if os(Linux)
                    var peak = 0
                    while true {
                        let done = wait4(pid, &status, WNOHANG, &usage)
                        if done == pid || (done == -1 && errno != EINTR) { break }
                        peak = max(peak, Self.highWaterMark(pid) ?? 0)
                        Thread.sleep(forTimeInterval: 0.01)
                    }
                #else
                    while wait4(pid, &status, 0, &usage) == -1, errno == EINTR {}
                    let peak = Int(usage.ru_maxrss)  // bytes on macOS
                #endif
                func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1_000_000 }
                continuation.resume(
                    returning: ((status >> 8) & 0xff, peak, seconds(usage.ru_utime) + seconds(usage.ru_stime)))
            }.start()
        }
    }

    /// The process's peak resident memory in bytes so far (`VmHWM`), from /proc.
    static func highWaterMark(_ pid: pid_t) -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
            let kib = Int(line.split(whereSeparator: { $0 == " " || $0 == "\t" }).dropFirst().first ?? "")
        else { return nil }
        return kib * 1024
    }

    func terminate() { kill(pid, SIGTERM) }

    /// User plus system CPU time the child has used so far, from /proc; nil elsewhere.
    func cpuSeconds() -> Double? {
        #if os(Linux)
            guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
                let end = stat.lastIndex(of: ")")
            else { return nil }
            // Fields after the command name (which may hold spaces): state is field 3, utime 14, stime 15.
            let fields = stat[stat.index(after: end)...].split(separator: " ")
            guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
            return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
        #else
            return nil
        #endif
    }
}
