import Foundation
import Testing

@testable import JobQCore

/// A worker's commands end with it, however it dies, and a worker signals nothing it did not
/// start: not another user's process, not a container's beside it, not a process carrying a
/// forged or stale `JOBQ_ATTEMPT_MARK`.
@Suite("A worker's commands and nobody else's", .serialized)
struct CommandGuardianTests {
    #if os(Linux)
        /// A worker killed with SIGKILL (the OOM killer) while its shell job runs a command that
        /// also started a daemon (`setsid`, out of the command's group): its guardian kills both
        /// at once, before the job's lease runs out and it runs again.
        @Test func aKilledWorkersCommandAndItsDaemonDieWithIt() async throws {
            let store = try TemporaryStore()
            let daemonFile = store.directory.appendingPathComponent("daemon").path
            let daemon =
                "setsid sh -c 'echo $$ > \(daemonFile).new && mv \(daemonFile).new \(daemonFile); exec sleep 303' & "
            let (_, worker, log) = try await ProcessTests.workerRunningAJob(
                store, seconds: 300, workerArguments: ["--lease", "60s"], log: "killed.log", prelude: daemon)
            let command = try Self.pid(in: log + ".started")
            try await EventProcessTests.waitFor("the daemon to start", timeout: 30) {
                FileManager.default.fileExists(atPath: daemonFile)
            }
            let escaped = try Self.pid(in: daemonFile)
            #expect(ProcessTests.isRunning(command) && ProcessTests.isRunning(escaped))
            kill(worker.processIdentifier, SIGKILL)
            try await EventProcessTests.waitFor("the command to be killed", timeout: 30) {
                !ProcessTests.isRunning(command)
            }
            try await EventProcessTests.waitFor("the daemon to be killed", timeout: 30) {
                !ProcessTests.isRunning(escaped)
            }
        }

        /// A worker run as another worker's shell job (so it carries that job's mark), killed
        /// with the outer worker: the outer guardian kills it, and its own guardian, which does
        /// not carry the mark, lives on to end the inner command (a test run killed midway once
        /// left such a command running: the outer guardian had killed the inner one first).
        @Test func aWorkerRunAsAnotherWorkersCommandStillEndsItsOwnCommands() async throws {
            let outer = try TemporaryStore()
            let inner = try TemporaryStore()
            let pidFile = inner.directory.appendingPathComponent("inner.pid").path
            let script = "echo $$ > \(pidFile).new && mv \(pidFile).new \(pidFile); exec sleep 304"
            _ = try await CLI.run(
                ["enqueue", "shell", "--payload", #"{"script": "\#(script)"}"#], db: inner.path)
            let payload = try String(
                decoding: JSONSerialization.data(withJSONObject: ["argv": [CLI.binary.path, "--db", inner.path, "work"]]
                ),
                as: UTF8.self)
            _ = try await CLI.run(["enqueue", "shell", "--payload", payload], db: outer.path)
            let worker = try CLI.startDetached(
                ["work"], db: outer.path, logPath: outer.directory.appendingPathComponent("outer.log").path)
            try await EventProcessTests.waitFor("the inner command to start", timeout: 60) {
                FileManager.default.fileExists(atPath: pidFile)
            }
            let command = try Self.pid(in: pidFile)
            kill(worker.processIdentifier, SIGKILL)
            try await EventProcessTests.waitFor("the inner command to be killed", timeout: 30) {
                !ProcessTests.isRunning(command)
            }
        }

        /// Decoys: processes that carry a mark no worker of this machine wrote, in both forms jobq
        /// has used (`PID.START.UUID` naming a worker that is gone, and a bare `UUID`); as root,
        /// one of user `nobody`; and, where PID namespaces can be made, a shell job's command in
        /// a container-like namespace whose worker is its pid 1. Workers start commands, and one
        /// is killed outright (its guardian acts): every decoy runs on.
        @Test func processesAWorkerDidNotStartAreNeverSignalled() async throws {
            let store = try TemporaryStore()
            var decoys: [(what: String, pid: pid_t)] = []
            var children: [Child] = []
            defer {
                for decoy in decoys { kill(decoy.pid, SIGKILL) }
            }
            func decoy(_ what: String, _ arguments: [String]) throws {
                let child = try Child(
                    executable: URL(fileURLWithPath: arguments[0]), arguments: Array(arguments.dropFirst()),
                    environment: [:], stdoutPath: "/dev/null", stderrPath: "/dev/null")
                children.append(child)
                decoys.append((what, child.processIdentifier))
            }
            let gone = "1.1.\(UUID().uuidString)"
            try decoy(
                "a process marked by a worker that is gone",
                ["/usr/bin/env", "JOBQ_ATTEMPT_MARK=\(gone)", "sleep", "300"])
            try decoy(
                "a process with a made-up mark",
                ["/usr/bin/env", "JOBQ_ATTEMPT_MARK=\(UUID().uuidString)", "sleep", "300"])
            if geteuid() == 0, FileManager.default.isExecutableFile(atPath: "/usr/sbin/runuser") {
                try decoy(
                    "another user's process with a stale mark",
                    [
                        "/usr/sbin/runuser", "-u", "nobody", "--", "/usr/bin/env", "JOBQ_ATTEMPT_MARK=\(gone)", "sleep",
                        "300"
                    ])
            } else {
                print("[note] not root: the other user's decoy is left out")
            }
            // A container's worker, pid 1 of its own PID namespace, running a shell job.
            let container = try TemporaryStore()
            _ = try await CLI.run(
                ["enqueue", "shell", "--payload", #"{"argv": ["sleep", "302.25"]}"#], db: container.path)
            let unshare = try Child(
                executable: URL(fileURLWithPath: "/usr/bin/unshare"),
                arguments: [
                    "--pid", "--fork", "--mount-proc", "--kill-child", CLI.binary.path, "--db", container.path, "work"
                ],
                environment: [:], stdoutPath: container.path + ".out", stderrPath: container.path + ".err")
            children.append(unshare)
            defer { kill(unshare.processIdentifier, SIGKILL) }
            do {
                try await EventProcessTests.waitFor("the container's command to start", timeout: 60) {
                    Self.processes(commandLine: ["sleep", "302.25"]).count == 1
                }
                decoys.append(("a container's command", Self.processes(commandLine: ["sleep", "302.25"])[0]))
            } catch {
                let said = (try? String(contentsOfFile: container.path + ".err", encoding: .utf8)) ?? ""
                Issue.record("a PID namespace could not be made here (unshare --pid): \(said)")
            }

            // A worker on another store starts commands, as does `jobq work` when it starts...
            _ = try await CLI.run(["enqueue", "shell", "--payload", #"{"argv": ["true"]}"#], db: store.path)
            let drained = try await CLI.run(["work", "--until-empty"], db: store.path)
            #expect(drained.status == 0, "\(drained.stderr)")
            #expect(!drained.stderr.contains("killed"), "\(drained.stderr)")
            // ...and a worker killed outright has its guardian end its commands.
            let (_, worker, log) = try await ProcessTests.workerRunningAJob(
                store, seconds: 300, workerArguments: ["--lease", "60s"], log: "killed.log")
            let command = try Self.pid(in: log + ".started")
            kill(worker.processIdentifier, SIGKILL)
            try await EventProcessTests.waitFor("the killed worker's command to end", timeout: 30) {
                !ProcessTests.isRunning(command)
            }
            try await pause(0.5)
            for decoy in decoys {
                #expect(ProcessTests.isRunning(decoy.pid), "\(decoy.what) (pid \(decoy.pid)) was killed")
            }
            withExtendedLifetime(children) {}
        }

        /// The pid a job's script wrote to `path`.
        static func pid(in path: String) throws -> pid_t {
            try #require(
                pid_t(try String(contentsOfFile: path, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines))
            )
        }

        /// Live processes whose command line is `arguments` (the program by its name or path).
        static func processes(commandLine arguments: [String]) -> [pid_t] {
            let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
            return entries.compactMap { entry in
                guard let process = pid_t(entry),
                    let line = FileManager.default.contents(atPath: "/proc/\(entry)/cmdline")
                else { return nil }
                let words = line.split(separator: 0, omittingEmptySubsequences: false).dropLast().map {
                    String(decoding: $0, as: UTF8.self)
                }
                guard words.count == arguments.count, let program = words.first,
                    program == arguments[0] || program.hasSuffix("/" + arguments[0]),
                    Array(words.dropFirst()) == Array(arguments.dropFirst()), ProcessTests.isRunning(process)
                else { return nil }
                return process
            }
        }
    #endif
}
