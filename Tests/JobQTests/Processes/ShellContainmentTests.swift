import Foundation
import Testing

@testable import JobQCore
@testable import JobQPostgres
@testable import JobQSQL
@testable import JobQSQLite

/// A `shell` job's commands are contained: stopped as a whole process group (also when they
/// ignore SIGTERM), never outliving their attempt, bounded in what they can write, and blind
/// to the worker's secrets.
@Suite("Shell jobs are contained")
struct ShellContainmentTests {
    /// Runs `script` as a shell job with `timeout` on a fresh store and returns the job once it
    /// is final, together with the process group id the script wrote into `pidfile`.
    static func runTimedOut(_ script: String, timeout: Duration, grace: Duration) async throws -> (
        job: Job, group: pid_t
    ) {
        let store = try TemporaryStore()
        defer { try? FileManager.default.removeItem(at: store.directory) }
        let queue = try store.open()
        let pidfile = store.directory.appendingPathComponent("pid").path
        let payload = try JSONSerialization.data(withJSONObject: ["script": "echo $$ > \(pidfile); \(script)"])
        let job = try await queue.enqueue(
            try JobRequest(
                executor: "shell", payloadJSON: String(decoding: payload, as: UTF8.self),
                options: .init(maxAttempts: 1, timeout: timeout)))
        try await work(queue, executors: [ShellExecutor(terminationGrace: grace)], limit: .seconds(60))
        let ended = try #require(try await queue.job(job.id))
        let group = try #require(
            pid_t(try String(contentsOfFile: pidfile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)))
        return (ended, group)
    }

    static func groupExists(_ group: pid_t) -> Bool {
        kill(-group, 0) == 0 || errno != ESRCH
    }

    @Test func aTimeoutEndsTheWholePipelineBeforeTheOutcomeIsRecorded() async throws {
        let (job, group) = try await Self.runTimedOut("sleep 30 | cat", timeout: .milliseconds(300), grace: .seconds(2))
        #expect(job.state == .dead && (job.error ?? "").contains("timed out"), "\(job.state): \(job.error ?? "")")
        // The pool returned only after the outcome was written, which waits for the group.
        #expect(
            !Self.groupExists(group), "a process of the command's group (the pipeline's sleep) outlived the attempt")
    }

    @Test func aCommandThatIgnoresSIGTERMIsKilledAfterTheGrace() async throws {
        let started = ContinuousClock.now
        let (job, group) = try await Self.runTimedOut(
            "trap '' TERM; sleep 300; sleep 300", timeout: .milliseconds(300), grace: .milliseconds(700))
        #expect(job.state == .dead)
        #expect(!Self.groupExists(group), "SIGKILL after the grace ended the group")
        // Waited out, the command would take 600 s (both sleeps ignore SIGTERM too); well under
        // that, with room for a loaded run (the start of a parallel CI run once took 21 s here).
        #expect(ContinuousClock.now - started < .seconds(120), "the group was killed, not waited out")
    }

    @Test func backgroundProcessesDoNotOutliveTheirCommand() async throws {
        let store = try TemporaryStore()
        defer { try? FileManager.default.removeItem(at: store.directory) }
        let queue = try store.open()
        let pidfile = store.directory.appendingPathComponent("pid").path
        let job = try await queue.enqueue(
            try JobRequest(
                executor: "shell",
                payloadJSON: #"{"script": "echo $$ > \#(pidfile); (trap '' TERM; sleep 30) & echo started"}"#))
        try await work(queue, executors: [ShellExecutor(terminationGrace: .milliseconds(500))], limit: .seconds(60))
        let done = try #require(try await queue.job(job.id))
        #expect(done.state == .succeeded && (done.resultJSON ?? "").contains("started"), "\(done.resultJSON ?? "")")
        let group = try #require(
            pid_t(try String(contentsOfFile: pidfile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)))
        #expect(!Self.groupExists(group), "the background sleep was ended with its command")
    }

    @Test func outputBeyondTheLimitIsDroppedNotStored() async throws {
        let queue = try JobQueue.inMemory()
        let before = Self.shellScratch()
        let job = try await queue.enqueue(
            try JobRequest(
                executor: "shell", payloadJSON: #"{"script": "yes | head -c 3000000; yes error | head -c 300000 >&2"}"#)
        )
        try await work(queue, executors: [ShellExecutor()], limit: .seconds(120))
        let done = try #require(try await queue.job(job.id))
        #expect(done.state == .succeeded)
        let result = try JSONDecoder().decode(ShellExecutor.Output.self, from: Data((done.resultJSON ?? "").utf8))
        #expect(result.stdout.utf8.count == ShellExecutor.outputLimit && result.stdoutTruncated)
        #expect(result.stderr.utf8.count == ShellExecutor.outputLimit && result.stderrTruncated)
        #expect(Self.shellScratch() == before, "nothing was written to the temporary directory")
    }

    static func shellScratch() -> Set<String> {
        Set(
            ((try? FileManager.default.contentsOfDirectory(atPath: NSTemporaryDirectory())) ?? []).filter {
                $0.hasPrefix("jobq-shell-")
            })
    }

    @Test func theWorkersSecretsStayOutOfACommandsEnvironment() async throws {
        let store = try TemporaryStore()
        defer { try? FileManager.default.removeItem(at: store.directory) }
        let db = store.path
        _ = try await CLI.run(["enqueue", "shell", "--payload", #"{"argv": ["env"]}"#], db: db)
        _ = try await CLI.run(
            ["enqueue", "shell", "--payload", #"{"argv": ["env"], "env": {"PGPASSWORD": "given-by-the-job"}}"#], db: db)
        // Descriptors: only the standard three (and the one `ls` opens to read the folder).
        _ = try await CLI.run(["enqueue", "shell", "--payload", #"{"script": "ls /proc/self/fd"}"#], db: db)
        // The worker's own environment, as any process of its user can read it.
        _ = try await CLI.run(
            ["enqueue", "shell", "--payload", #"{"script": "tr '\\000' '\\n' < /proc/$PPID/environ"}"#], db: db)
        let secrets = [
            "JOBQ_DASHBOARD_TOKEN": "dashboard-secret-123", "PGPASSWORD": "pg-secret-456", "JOBQ_LOG_LEVEL": "info"
        ]
        let worker = try await CLI.run(
            ["work", "--until-empty"], db: nil, environment: secrets.merging(["JOBQ_DB": db]) { $1 })
        #expect(worker.status == 0, "\(worker.stderr)")
        let queue = try store.open()
        let jobs = try await queue.jobs(limit: 10).sorted { $0.id < $1.id }
        #expect(jobs.count == 4 && jobs.allSatisfy { $0.state == .succeeded })
        let plain = jobs[0].resultJSON ?? ""
        for (name, value) in secrets {
            #expect(!plain.contains(value), "\(name) reached the command")
        }
        #expect(!plain.contains("JOBQ_DB=") && !plain.contains(db), "JOBQ_DB reached the command")
        #expect(plain.contains("JOBQ_JOB_ID=\(jobs[0].id)"), "the job's identity is passed down")
        #expect((jobs[1].resultJSON ?? "").contains("PGPASSWORD=given-by-the-job"), "a job's own env is given as asked")
        let output = try JSONDecoder().decode(ShellExecutor.Output.self, from: Data((jobs[2].resultJSON ?? "").utf8))
        let descriptors = output.stdout.split(separator: "\n").compactMap { Int($0) }.sorted()
        #expect(descriptors == [0, 1, 2, 3], "the command inherited descriptors of the worker: \(descriptors)")
        let parent = try JSONDecoder().decode(ShellExecutor.Output.self, from: Data((jobs[3].resultJSON ?? "").utf8))
        #expect(
            parent.stdout.contains("PGPASSWORD="), "the worker's environment was read: \(parent.stdout.prefix(300))")
        for (name, value) in secrets where name != "JOBQ_LOG_LEVEL" {
            #expect(!parent.stdout.contains(value), "\(name) was read from /proc/$PPID/environ")
        }
    }

    /// A password in `jobq work --db postgres://user:secret@...` is hidden from the worker's
    /// command line (`/proc/PID/cmdline`, which every local user and every shell job reads) once
    /// the worker has read it; the worker still connects with it.
    @Test(.enabled(if: PostgresTestServer.available, PostgresTestServer.skipReason))
    func aPasswordOnTheCommandLineIsHiddenFromOtherProcesses() async throws {
        try await PostgresTestServer.withFreshDatabase { settings in
            let url = settings.description
            let secret = "cmdline-secret-\(UInt32.random(in: 1000...9999))"
            let withPassword = url.replacingOccurrences(
                of: "://\(settings.username)@", with: "://\(settings.username):\(secret)@")
            try #require(withPassword.contains(secret), "\(url)")
            let enqueued = try await CLI.run(
                ["enqueue", "shell", "--payload", #"{"script": "tr '\\000' ' ' < /proc/$PPID/cmdline"}"#],
                db: withPassword)
            #expect(enqueued.status == 0, "\(enqueued.stderr)")
            let worker = try await CLI.run(["work", "--until-empty", "--allow-shell"], db: withPassword)
            #expect(worker.status == 0, "\(worker.stderr)")
            let queue = try await JobQueue(postgres: settings, logger: PostgresTestServer.logger)
            let job = try #require(try await queue.jobs().first)
            #expect(job.state == .succeeded, "\(job.error ?? "")")
            let output = try JSONDecoder().decode(ShellExecutor.Output.self, from: Data((job.resultJSON ?? "").utf8))
            #expect(output.stdout.contains("work --until-empty"), "the worker's command line: \(output.stdout)")
            #expect(output.stdout.contains(":***"), "\(output.stdout)")
            #expect(!output.stdout.contains(secret), "the password was read from /proc/$PPID/cmdline")
        }
    }

    /// A command that leaves its job's process group (`setsid`, as a daemon does) and ignores
    /// SIGTERM is still ended with its attempt and reaped: no process outlives the attempt and
    /// none is left a zombie.
    @Test func aDaemonThatLeavesTheProcessGroupIsEndedAndReaped() async throws {
        let store = try TemporaryStore()
        defer { try? FileManager.default.removeItem(at: store.directory) }
        let queue = try store.open()
        let daemonFile = store.directory.appendingPathComponent("daemon").path
        let script =
            "setsid sh -c 'echo $$ > \(daemonFile); trap \"\" TERM; sleep 300' & "
            + "while [ ! -s \(daemonFile) ]; do sleep 0.05; done; echo started"
        let payload = try JSONSerialization.data(withJSONObject: ["script": script])
        let job = try await queue.enqueue(
            try JobRequest(executor: "shell", payloadJSON: String(decoding: payload, as: UTF8.self)))
        let started = ContinuousClock.now
        try await work(queue, executors: [ShellExecutor(terminationGrace: .milliseconds(300))], limit: .seconds(200))
        // Far below the daemon's 300 s sleep, and far above what a loaded CI machine takes to
        // start the two shells (a parallel run once took 22 s here).
        #expect(ContinuousClock.now - started < .seconds(120), "the attempt waited for the daemon's sleep")
        let done = try #require(try await queue.job(job.id))
        #expect(done.state == .succeeded && (done.resultJSON ?? "").contains("started"), "\(done.resultJSON ?? "")")
        let daemon = try #require(
            pid_t(
                try String(contentsOfFile: daemonFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines))
        )
        #expect(kill(daemon, 0) == -1 && errno == ESRCH, "the daemon \(daemon) outlived its attempt, or is a zombie")
    }

    @Test(.enabled(if: PostgresTestServer.available, "needs JOBQ_TEST_POSTGRES_URL"))
    func aPostgresWorkerRunsShellJobsOnlyWhenAllowed() async throws {
        let db = try await TestStore.postgres.location()
        _ = try await CLI.run(
            ["enqueue", "shell", "--payload", #"{"argv": ["echo", "ran"]}"#, "--max-attempts", "2"], db: db)
        // --until-empty does not wait for a retry's backoff: a run may end before the second
        // refusal is due, and the next one makes it.
        var list = try await CLI.run(["list", "--json"], db: db)
        for _ in 0..<10 where !list.stdout.contains("\"dead\"") {
            let refused = try await CLI.run(["work", "--until-empty", "--backoff", "10ms"], db: db)
            #expect(refused.status == 0, "\(refused.stderr)")
            list = try await CLI.run(["list", "--json"], db: db)
        }
        #expect(list.stdout.contains("--allow-shell") && list.stdout.contains("\"dead\""), "\(list.stdout)")
        _ = try await CLI.run(["enqueue", "shell", "--payload", #"{"argv": ["echo", "ran"]}"#], db: db)
        let allowed = try await CLI.run(["work", "--until-empty", "--allow-shell"], db: db)
        #expect(allowed.status == 0, "\(allowed.stderr)")
        let after = try await CLI.run(["list", "--json", "--state", "succeeded"], db: db)
        #expect(after.stdout.contains("ran"), "\(after.stdout)")
    }
}
