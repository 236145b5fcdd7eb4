import CProcessControl
import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A child process started with `posix_spawn` in a process group of its own, so that it and
/// everything it starts can be signalled, and waited for, together.
///
/// Not Foundation's `Process`, because a child must start with default signal handling: a
/// worker under swift-service-lifecycle ignores SIGTERM and SIGINT (to receive them through
/// dispatch sources), and ignored signals are inherited across exec, so a child started the
/// usual way would shrug off the SIGTERM that cancellation sends.
///
/// Its output goes to files, or is captured through close-on-exec pipes keeping at most a limit
/// of each stream (the rest is read and dropped, so a chatty command neither blocks on a full
/// pipe nor fills a disk).
package final class ChildProcess: Sendable {
    /// Where the child's stdout and stderr go.
    enum Output {
        case files(stdout: String, stderr: String)
        /// Kept in memory: the first `limit` bytes of each stream, and the last `tail` bytes
        /// of stderr.
        case capture(limit: Int, tail: Int)
    }

    /// What a captured stream held.
    struct Captured: Sendable {
        var kept: [UInt8] = []
        /// Every byte the stream carried, kept or not.
        var total = 0
        /// The stream's last bytes (stderr only).
        var tail: [UInt8] = []
    }

    let pid: pid_t
    /// `NAME=VALUE` in the child's environment, unique to it: what its descendants still carry
    /// after they leave its process group (`setsid`), by which ``endGroup(grace:)`` finds them.
    let mark: String
    private let exit = Once<(code: Int32, signal: Int32?)>()
    /// Whether the guardian was told that nothing of it is left.
    private let forgotten = Atomic<Bool>(false)
    private let captured = Once<(stdout: Captured, stderr: Captured)>()

    /// Starts `executable` with `arguments` in a new process group; stdin is /dev/null.
    init(executable: String, arguments: [String], environment: [String: String], directory: String?, output: Output)
        throws
    {
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
        var pipes: [(read: Int32, write: Int32)] = []
        switch output {
        case .files(let stdoutPath, let stderrPath):
            posix_spawn_file_actions_addopen(&actions, 1, stdoutPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
            posix_spawn_file_actions_addopen(&actions, 2, stderrPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        case .capture:
            for target in [Int32(1), 2] {
                let ends = try Descriptors.pipe()
                pipes.append(ends)
                // dup2 clears close-on-exec on the copy: the child keeps its end as 1 or 2 only.
                posix_spawn_file_actions_adddup2(&actions, ends.write, target)
            }
        }
        defer {
            // The parent keeps only the read ends.
            for ends in pipes { close(ends.write) }
        }
        // Nothing but the standard streams: not this process's descriptors, nor any it
        // inherited from its own parent without close-on-exec (Darwin: POSIX_SPAWN_CLOEXEC_DEFAULT).
        _ = jobq_spawn_close_from(&actions, 3)
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
        // Its own process group (its id is the child's pid): a timeout or a cancel signals the
        // command and everything it started, not the direct child alone.
        posix_spawnattr_setpgroup(&attributes, 0)
        var flags = Int32(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETPGROUP)
        #if canImport(Darwin)
            flags |= Int32(POSIX_SPAWN_CLOEXEC_DEFAULT)
        #endif
        posix_spawnattr_setflags(&attributes, Int16(flags))
        Self.adoptOrphans()

        let argv = ([program] + argumentList).map { strdup($0) } + [nil]
        let mark = AttemptMark.make()
        self.mark = mark
        // Told before it starts: should this process die now, its guardian finds the command by
        // its mark (``CommandGuardian``).
        CommandGuardian.watch(mark)
        let envp =
            environment.filter { $0.key != AttemptMark.name }.map { strdup("\($0.key)=\($0.value)") } + [
                strdup(mark), nil
            ]
        defer {
            for pointer in argv { free(pointer) }
            for pointer in envp { free(pointer) }
        }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, program, &actions, &attributes, argv, envp)
        guard result == 0 else {
            CommandGuardian.forget(mark)
            for ends in pipes { close(ends.read) }
            let reason = String(cString: strerror(result))
            if let directory, !FileManager.default.fileExists(atPath: directory) {
                throw NonRetryableError("cannot start \(executable): working directory \(directory) does not exist")
            }
            throw NonRetryableError("cannot start \(executable): \(reason)")
        }
        self.pid = pid
        CommandGuardian.watchGroup(pid, of: mark)
        let childPID = pid
        let exit = self.exit
        // waitpid and reads block, so they get threads of their own rather than cooperative ones.
        Thread.detachNewThread {
            var status: Int32 = 0
            while waitpid(childPID, &status, 0) == -1, errno == EINTR {}
            let signal: Int32? = (status & 0x7f) == 0 ? nil : status & 0x7f
            exit.set((signal.map { 128 + $0 } ?? (status >> 8) & 0xff, signal))
        }
        if case .capture(let limit, let tail) = output {
            let captured = self.captured
            let readEnds = pipes.map(\.read)
            Thread.detachNewThread {
                let streams = Self.drain(readEnds, limit: limit, tail: tail)
                captured.set((streams[0], streams[1]))
            }
        } else {
            captured.set((Captured(), Captured()))
        }
    }

    /// A child that was only waited for (not ended with ``endGroup(grace:)``): the guardian
    /// forgets it once its group is gone; one whose group still runs stays watched, and is
    /// killed should this process die.
    deinit {
        if hasExited, kill(-pid, 0) == -1, errno == ESRCH { forget() }
    }

    private func forget() {
        if !forgotten.exchange(true, ordering: .relaxed) { CommandGuardian.forget(mark) }
    }

    var hasExited: Bool { exit.value != nil }

    /// The signal that ended it, if one did (nil while it runs or after a normal exit).
    var terminatingSignal: Int32? { exit.value?.signal }

    /// The exit status; 128 + N when killed by signal N, as shells report it.
    func wait() async -> Int32 {
        await exit.wait().code
    }

    /// What it wrote (empty streams when its output went to files), once every process that
    /// held the pipes has closed them.
    func output() async -> (stdout: Captured, stderr: Captured) {
        await captured.wait()
    }

    /// Sends `signal` to the child alone, while it runs.
    func signal(_ signal: Int32) {
        if !hasExited { kill(pid, signal) }
    }

    /// Sends `signal` to every process of the child's group.
    func signalGroup(_ signal: Int32) {
        kill(-pid, signal)
    }

    /// After the child exited: ends whatever is left of its group (background commands, a
    /// pipeline's other members) with SIGTERM, then SIGKILL after `grace`, and returns once no
    /// process of the group is left (or, should one be stuck in the kernel, after a further
    /// `grace`). Returns whether the group is gone.
    ///
    /// Then the same for its descendants that left the group (a daemon started with `setsid`,
    /// reparented to this process as the subreaper once its parent exited): found by the mark
    /// they inherited, ended, and reaped, so that none outlives the attempt or stays a zombie.
    /// One that clears its whole environment is not found this way.
    @discardableResult
    func endGroup(grace: Duration) async -> Bool {
        _ = await exit.wait()
        var gone = await groupGone(within: .zero)
        if !gone {
            signalGroup(SIGTERM)
            gone = await groupGone(within: grace)
        }
        if !gone {
            signalGroup(SIGKILL)
            gone = await groupGone(within: max(grace, .seconds(1)))
        }
        let escapedGone = await endMarked(grace: grace)
        // Nothing of it is left: its group id may be given to another process from now on.
        if gone && escapedGone { forget() }
        return gone && escapedGone
    }

    /// Ends the live processes carrying this child's mark (SIGTERM, SIGKILL after `grace`) and
    /// reaps those that are this process's children. Linux only (it reads `/proc`).
    private func endMarked(grace: Duration) async -> Bool {
        #if os(Linux)
            var seen: Set<pid_t> = []
            for signal in [SIGTERM, SIGKILL] {
                let marked = AttemptMark.processes(carrying: mark)
                if marked.isEmpty { break }
                seen.formUnion(marked)
                for process in marked { kill(process, signal) }
                let deadline = ContinuousClock.now + (signal == SIGTERM ? grace : max(grace, .seconds(1)))
                while ContinuousClock.now < deadline {
                    Self.reap(seen)
                    if AttemptMark.processes(carrying: mark).isEmpty { break }
                    await Descriptors.sleep(.milliseconds(10))
                }
            }
            // A killed process may still be a zombie for a moment before it can be reaped.
            for _ in 0..<50 where !Self.reap(seen) {
                await Descriptors.sleep(.milliseconds(10))
            }
            return AttemptMark.processes(carrying: mark).isEmpty
        #else
            return true
        #endif
    }

    /// Reaps those of `processes` that are this process's children and have exited; returns
    /// whether none of them is left a zombie of this process.
    @discardableResult
    private static func reap(_ processes: Set<pid_t>) -> Bool {
        var done = true
        for process in processes {
            var status: Int32 = 0
            let result = waitpid(process, &status, WNOHANG)
            // 0: still running or a zombie not yet ready; -1 ECHILD: not ours (or reaped).
            if result == 0 { done = false }
        }
        return done
    }

    /// Polls until no process of the group is left, reaping the members this process adopted
    /// (see ``adoptOrphans()``); at most `limit`. Call only once the child itself was reaped.
    private func groupGone(within limit: Duration) async -> Bool {
        let deadline = ContinuousClock.now + limit
        while true {
            #if os(Linux)
                var status: Int32 = 0
                while waitpid(-pid, &status, WNOHANG) > 0 {}
            #endif
            if kill(-pid, 0) == -1, errno == ESRCH { return true }
            if ContinuousClock.now >= deadline { return false }
            // Not Task.sleep: this runs in cancelled tasks too (a job being stopped).
            await Descriptors.sleep(.milliseconds(10))
        }
    }

    /// On Linux, makes this process the reaper of its orphaned descendants: a command's
    /// background process whose parent exited is reparented here rather than to PID 1 (which
    /// in a container may never reap it, leaving a zombie that keeps its group alive), and
    /// ``endGroup(grace:)`` reaps it.
    private static func adoptOrphans() {
        _ = adoption
    }

    private static let adoption: Void = {
        _ = jobq_become_child_subreaper()
    }()

    /// Reads every descriptor to its end, keeping at most `limit` bytes of each and the last
    /// `tail` bytes of the second; then closes them.
    private static func drain(_ descriptors: [Int32], limit: Int, tail: Int) -> [Captured] {
        var streams = descriptors.map { _ in Captured() }
        var open = Set(descriptors.indices)
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while !open.isEmpty {
            var polled = open.sorted().map { pollfd(fd: descriptors[$0], events: Int16(POLLIN), revents: 0) }
            let ready = poll(&polled, nfds_t(polled.count), -1)
            if ready < 0 {
                if errno == EINTR { continue }
                break
            }
            for entry in polled where entry.revents != 0 {
                guard let index = descriptors.firstIndex(of: entry.fd) else { continue }
                let count = buffer.withUnsafeMutableBytes { systemRead(entry.fd, $0.baseAddress, $0.count) }
                if count < 0, errno == EINTR || errno == EAGAIN { continue }
                guard count > 0 else {
                    open.remove(index)
                    continue
                }
                streams[index].total += count
                let room = limit - streams[index].kept.count
                if room > 0 { streams[index].kept += buffer[0..<min(room, count)] }
                if index == 1, tail > 0 {
                    streams[index].tail += buffer[max(0, count - tail)..<count]
                    if streams[index].tail.count > tail {
                        streams[index].tail.removeFirst(streams[index].tail.count - tail)
                    }
                }
            }
        }
        for descriptor in descriptors { close(descriptor) }
        return streams
    }
}

private func systemRead(_ descriptor: Int32, _ buffer: UnsafeMutableRawPointer?, _ count: Int) -> Int {
    #if canImport(Glibc)
        Glibc.read(descriptor, buffer, count)
    #else
        Darwin.read(descriptor, buffer, count)
    #endif
}

/// A value set once, awaited by any number of tasks.
final class Once<Value: Sendable>: Sendable {
    private let state = Mutex<(value: Value?, waiters: [CheckedContinuation<Value, Never>])>((nil, []))

    var value: Value? { state.withLock { $0.value } }

    func set(_ value: Value) {
        let waiters = state.withLock { state -> [CheckedContinuation<Value, Never>] in
            guard state.value == nil else { return [] }
            state.value = value
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume(returning: value) }
    }

    func wait() async -> Value {
        await withCheckedContinuation { continuation in
            let value = state.withLock { state -> Value? in
                if state.value == nil { state.waiters.append(continuation) }
                return state.value
            }
            if let value { continuation.resume(returning: value) }
        }
    }
}

/// Descriptors jobq opens itself: close-on-exec from the start, so that no child started in
/// between (by any thread) inherits them.
package enum Descriptors {
    /// A pipe whose two ends are close-on-exec.
    package static func pipe() throws -> (read: Int32, write: Int32) {
        var ends: [Int32] = [0, 0]
        guard jobq_pipe_cloexec(&ends) == 0 else {
            throw NonRetryableError("cannot create a pipe: \(String(cString: strerror(errno)))")
        }
        return (ends[0], ends[1])
    }

    /// Sleeps without regard to task cancellation.
    package static func sleep(_ duration: Duration) async {
        await withCheckedContinuation { continuation in
            DispatchQueue.global().asyncAfter(deadline: .now() + duration.inSeconds) { continuation.resume() }
        }
    }
}
