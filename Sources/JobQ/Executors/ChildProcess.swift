import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A child process started with `posix_spawn`, its output in files.
///
/// Not Foundation's `Process`, because a child must start with default signal handling: a
/// worker under swift-service-lifecycle ignores SIGTERM and SIGINT (to receive them through
/// dispatch sources), and ignored signals are inherited across exec, so a child started the
/// usual way would shrug off the SIGTERM that cancellation sends.
final class ChildProcess: Sendable {
    let pid: pid_t
    private let exit = Mutex<(status: Int32?, signal: Int32?, waiter: CheckedContinuation<Int32, Never>?)>((nil, nil, nil))

    /// Starts `executable` with `arguments`; stdin is /dev/null, stdout and stderr go to files.
    init(
        executable: String, arguments: [String], environment: [String: String], directory: String?,
        stdoutPath: String, stderrPath: String
    ) throws {
        #if canImport(Glibc)
        var actions = posix_spawn_file_actions_t()
        var attributes = posix_spawnattr_t()
        #else
        var actions: posix_spawn_file_actions_t? = nil
        var attributes: posix_spawnattr_t? = nil
        #endif
        posix_spawn_file_actions_init(&actions)
        posix_spawnattr_init(&attributes)
        defer {
            posix_spawn_file_actions_destroy(&actions)
            posix_spawnattr_destroy(&attributes)
        }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, stdoutPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, stderrPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        // posix_spawn has no portable "change directory" action; a shell does it, and then
        // execs the command. The directory and the arguments are positional parameters, never
        // parsed as shell text.
        var program = executable
        var argumentList = arguments
        if let directory {
            program = "/bin/sh"
            argumentList = ["-c", "cd -- \"$0\" && exec \"$@\"", directory, executable] + arguments
        }

        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGPIPE, SIGCHLD] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        var mask = sigset_t()
        sigemptyset(&mask)
        posix_spawnattr_setsigmask(&attributes, &mask)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))

        let argv = ([program] + argumentList).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, program, &actions, &attributes, argv, envp)
        guard result == 0 else {
            let reason = String(cString: strerror(result))
            if let directory, !FileManager.default.fileExists(atPath: directory) {
                throw NonRetryableError("cannot start \(executable): working directory \(directory) does not exist")
            }
            throw NonRetryableError("cannot start \(executable): \(reason)")
        }
        self.pid = pid
        let childPID = pid
        // waitpid blocks, so it gets a thread of its own rather than a cooperative one.
        let thread = Thread { [self] in
            var status: Int32 = 0
            while waitpid(childPID, &status, 0) == -1, errno == EINTR {}
            let signal: Int32? = (status & 0x7f) == 0 ? nil : status & 0x7f
            let code: Int32 = signal.map { 128 + $0 } ?? (status >> 8) & 0xff
            let waiter = exit.withLock { state -> CheckedContinuation<Int32, Never>? in
                state.status = code
                state.signal = signal
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume(returning: code)
        }
        thread.start()
    }

    var hasExited: Bool { exit.withLock { $0.status != nil } }

    /// The signal that ended it, if one did (nil while it runs or after a normal exit).
    var terminatingSignal: Int32? { exit.withLock { $0.signal } }

    /// The exit status; 128 + N when killed by signal N, as shells report it.
    func wait() async -> Int32 {
        await withCheckedContinuation { continuation in
            let status = exit.withLock { state -> Int32? in
                if state.status == nil { state.waiter = continuation }
                return state.status
            }
            if let status { continuation.resume(returning: status) }
        }
    }

    func signal(_ signal: Int32) {
        if !hasExited { kill(pid, signal) }
    }
}
