import CProcessControl
import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// This process's guardian: a small process forked from it the first time it starts a command,
/// which ends the commands still running when this process dies, however it dies (SIGKILL, the
/// OOM killer, a second SIGINT). By then their jobs' leases run out and the jobs run again, here
/// or elsewhere; an old command must not run beside its job's next attempt.
///
/// The guarantee is the kernel's: the guardian holds one end of a socket whose other end only
/// this process holds (close-on-exec, so no command inherits it), and reads end-of-file the
/// moment this process is gone. It then kills (SIGKILL) each command's process group, and the
/// command's descendants that left the group (`setsid`) by the attempt's mark (``AttemptMark``)
/// if they are this user's and in this PID namespace. It acts only on what this process told it:
/// it never looks for other workers' commands, so a process of another user, of a container
/// beside this one, or one carrying a forged or stale mark is never touched.
///
/// What it cannot catch: a descendant that left the group and cleared its environment (or runs
/// as another user, or in a PID namespace of its own), and anything when the guardian itself was
/// killed with its worker (`kill -9` of both; a container or a cgroup stopped whole ends every
/// process anyway). A command's attempt that ends normally is ended by its worker
/// (``ChildProcess/endGroup(grace:)``), and the guardian forgets it.
///
/// ```swift
/// let mark = AttemptMark.make()
/// CommandGuardian.watch(mark)                 // before the command starts
/// CommandGuardian.watchGroup(pid, of: mark)   // once it has
/// CommandGuardian.forget(mark)                // once nothing of it is left
/// ```
package enum CommandGuardian {
    private struct State {
        /// This process's end of the socket, nil before the first command.
        var socket: Int32?
        /// The commands the guardian watches, by mark: their process group, 0 before it exists.
        var watched: [String: pid_t] = [:]
    }

    private static let state = Mutex(State())

    /// A command with `mark` is about to start: a worker killed before it learns the command's
    /// pid still has it killed (by its mark).
    package static func watch(_ mark: String) {
        tell(JOBQ_GUARDIAN_WATCH, group: 0, mark: mark)
    }

    /// The command with `mark` runs in the process group `group`.
    package static func watchGroup(_ group: pid_t, of mark: String) {
        tell(JOBQ_GUARDIAN_GROUP, group: group, mark: mark)
    }

    /// Nothing of the command with `mark` is left: the guardian forgets it (its group id may be
    /// given to another process now).
    package static func forget(_ mark: String) {
        tell(JOBQ_GUARDIAN_FORGET, group: 0, mark: mark)
    }

    private static func tell(_ kind: Int, group: pid_t, mark: String) {
        precondition(mark.utf8.count < Int(JOBQ_GUARDIAN_MARK_MAX), "an attempt mark is short")
        state.withLock { state in
            if kind == JOBQ_GUARDIAN_FORGET {
                state.watched[mark] = nil
            } else {
                state.watched[mark] = max(group, state.watched[mark] ?? 0)
            }
            if let socket = state.socket, jobq_guardian_send(socket, Int32(kind), group, mark) == 0 { return }
            // Nothing to forget for a guardian that is not there: none is started for it.
            if kind == JOBQ_GUARDIAN_FORGET, state.socket == nil { return }
            // No guardian yet, or it was killed: a new one, told everything still watched.
            if let socket = state.socket { close(socket) }
            state.socket = nil
            let socket = jobq_guardian_start()
            guard socket >= 0 else { return }
            for (watchedMark, watchedGroup) in state.watched {
                let told =
                    jobq_guardian_send(socket, Int32(JOBQ_GUARDIAN_WATCH), 0, watchedMark) == 0
                    && (watchedGroup == 0
                        || jobq_guardian_send(socket, Int32(JOBQ_GUARDIAN_GROUP), watchedGroup, watchedMark) == 0)
                guard told else {
                    close(socket)
                    return
                }
            }
            state.socket = socket
        }
    }
}
