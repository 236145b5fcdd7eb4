import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The variable every process of a command's attempt inherits, `JOBQ_ATTEMPT_MARK=UUID`: the
/// attempt's own random id, known only to the worker that started it, its guardian and the
/// command's processes.
///
/// A command's descendants that leave its process group are found by it when the attempt ends
/// (``ChildProcess/endGroup(grace:)``), and by the worker's guardian when the worker dies
/// (``CommandGuardian``). Only a process that provably belongs to the worker is ever signalled:
/// one carrying exactly that mark, of the worker's user, in the worker's PID namespace. Linux
/// only (it reads `/proc`).
package enum AttemptMark {
    /// The variable's name.
    static let name = "JOBQ_ATTEMPT_MARK"

    /// `NAME=VALUE` for a new attempt.
    static func make() -> String {
        "\(name)=\(UUID().uuidString)"
    }

    /// Live processes (not zombies: those have no environment) of this process's user and PID
    /// namespace whose environment holds `mark` exactly.
    static func processes(carrying mark: String) -> [pid_t] {
        #if os(Linux)
            let wanted = Array(mark.utf8)
            let own = getpid()
            let user = geteuid()
            let namespace = pidNamespace(of: "self")
            guard namespace != nil, let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc")
            else { return [] }
            var found: [pid_t] = []
            for entry in entries {
                guard let process = pid_t(entry), process != own else { continue }
                // Another user's process is never this worker's command, nor one whose pid
                // namespace differs (a container beside it): leave them unread.
                var owner = stat()
                guard stat("/proc/\(process)", &owner) == 0, owner.st_uid == user,
                    pidNamespace(of: entry) == namespace
                else { continue }
                // Entries are NUL-separated `NAME=VALUE`s.
                if environment(of: process).split(separator: 0).contains(where: { $0.elementsEqual(wanted) }) {
                    found.append(process)
                }
            }
            return found
        #else
            return []
        #endif
    }

    /// The PID namespace `/proc/PROCESS` is in (`pid:[4026531836]`), nil when unreadable.
    private static func pidNamespace(of process: String) -> String? {
        var buffer = [CChar](repeating: 0, count: 128)
        let length = readlink("/proc/\(process)/ns/pid", &buffer, buffer.count - 1)
        guard length > 0 else { return nil }
        return String(decoding: buffer[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The first MiB of `/proc/PID/environ` (empty when unreadable).
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
