import Foundation
import Testing

@testable import JobQCore
@testable import JobQSQL
@testable import JobQSQLite

/// Several `jobq` processes on one store file, as in production.
@Suite("Worker processes sharing a store", .serialized)
struct ProcessTests {
    /// Enqueues a shell job that sleeps `seconds`, starts `jobq work` with `workerArguments`,
    /// and waits until the job is running its command. Returns the job's id, the worker, and its log's path.
    static func workerRunningAJob(
        _ store: TemporaryStore, seconds: Double, workerArguments: [String], log: String = "worker.log",
        prelude: String = ""
    ) async throws -> (id: String, worker: Child, log: String) {
        let db = store.path
        // The job says when it has started: a job seen `running` may still be between its claim
        // and its slot, where a shutdown releases it unstarted (as it should).
        let started = store.directory.appendingPathComponent("\(log).started").path
        // The file holds the command's pid, written whole before it appears.
        let script = prelude + "echo $$ > '\(started).new' && mv '\(started).new' '\(started)'; exec sleep \(seconds)"
        let id = try await CLI.run(["enqueue", "shell", "--payload", #"{"script": "\#(script)"}"#], db: db).stdout
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let logPath = store.directory.appendingPathComponent(log).path
        let worker = try CLI.startDetached(["work"] + workerArguments, db: db, logPath: logPath)
        let deadline = Date().addingTimeInterval(15)
        while !FileManager.default.fileExists(atPath: started), Date() < deadline {
            try await pause(0.02)
        }
        try #require(FileManager.default.fileExists(atPath: started), "the worker never started the job")
        return (id, worker, logPath)
    }

    @Test func killedWorkersJobRunsAgainAfterItsLeaseAndSucceedsOnce() async throws {
        let store = try TemporaryStore()
        let db = store.path
        // The job runs until the test lets it go, so that no load on the machine can let worker
        // A finish it before the kill.
        let release = store.directory.appendingPathComponent("release").path
        let script = "until [ -e \(release) ]; do sleep 0.05; done; echo attempt $JOBQ_ATTEMPT"
        let enqueued = try await CLI.run(["enqueue", "shell", "--payload", #"{"script": "\#(script)"}"#], db: db)
        let id = enqueued.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let logA = store.directory.appendingPathComponent("worker-a.log").path
        let workerA = try CLI.startDetached(["work", "--lease", "1s"], db: db, logPath: logA)

        let deadline = Date().addingTimeInterval(15)
        var job = try await CLITests.job(db, id)
        while job["state"] as? String != "running", Date() < deadline {
            try await pause(0.05)
            job = try await CLITests.job(db, id)
        }
        try #require(job["state"] as? String == "running", "worker A never started the job")
        kill(workerA.processIdentifier, SIGKILL)
        // The killed worker's shell lives on as an orphan, and holds the descriptor by which
        // Foundation sees the worker exit: let it end first.
        _ = FileManager.default.createFile(atPath: release, contents: nil)
        await workerA.wait()
        #expect(workerA.terminationReason == .uncaughtSignal)
        job = try await CLITests.job(db, id)
        #expect(job["state"] as? String == "running", "nobody finished the killed attempt")
        #expect(job["attempt"] as? Int == 1)

        let workerB = try await CLI.run(["work", "--until-empty", "--lease", "1s"], db: db)
        #expect(workerB.status == 0, "\(workerB.stderr)")
        #expect(workerB.stderr.contains("reclaimed 1 job(s)"))
        job = try await CLITests.job(db, id)
        #expect(job["state"] as? String == "succeeded")
        #expect(job["attempt"] as? Int == 2)
        #expect((job["result"] as? [String: Any])?["stdout"] as? String == "attempt 2\n")
        #expect(job["error"] is NSNull)
    }

    @Test func twoWorkerProcessesNeverRunTheSameAttemptTwice() async throws {
        let store = try TemporaryStore()
        let db = store.path
        let ranLog = store.directory.appendingPathComponent("ran.log").path
        let file = store.directory.appendingPathComponent("jobs.jsonl")
        let count = 160
        // Each job appends "id attempt worker-pid" to one shared file (O_APPEND lines are atomic).
        let line =
            #"{"executor": "shell", "payload": {"script": "echo \"$JOBQ_JOB_ID $JOBQ_ATTEMPT $PPID\" >> \#(ranLog)"}}"#
        try (Array(repeating: line, count: count).joined(separator: "\n") + "\n").write(
            to: file, atomically: true, encoding: .utf8)
        let enqueued = try await CLI.run(["enqueue", "--file", file.path], db: db)
        try #require(enqueued.status == 0, "\(enqueued.stderr)")
        let ids = Set(enqueued.stdout.split(separator: "\n").map(String.init))
        #expect(ids.count == count)

        let workers = try (0..<2).map { index in
            try CLI.startDetached(
                ["work", "--until-empty", "--concurrency", "4"], db: db,
                logPath: store.directory.appendingPathComponent("worker-\(index).log").path)
        }
        for worker in workers {
            await worker.wait()
            #expect(worker.terminationStatus == 0)
        }

        let runs = try String(contentsOfFile: ranLog, encoding: .utf8).split(separator: "\n").map {
            $0.split(separator: " ").map(String.init)
        }
        let attempts = runs.map { "\($0[0]) \($0[1])" }
        #expect(runs.count == count, "every job ran exactly once")
        #expect(Set(attempts).count == attempts.count, "no (id, attempt) ran twice")
        #expect(Set(runs.map { $0[0] }) == ids)
        #expect(runs.allSatisfy { $0[1] == "1" })
        let jobs = try await CLITests.jobs(db)
        #expect(jobs.allSatisfy { $0["state"] as? String == "succeeded" })
        print("two workers: \(Dictionary(grouping: runs, by: { $0[2] }).mapValues(\.count)) jobs per worker pid")
    }

    @Test func sigtermLetsTheRunningJobFinishAndExitsZero() async throws {
        let store = try TemporaryStore()
        let db = store.path
        let (id, worker, _) = try await Self.workerRunningAJob(store, seconds: 3, workerArguments: ["--grace", "10s"])
        kill(worker.processIdentifier, SIGTERM)
        await worker.wait()
        #expect(worker.terminationReason == .exit)
        #expect(worker.terminationStatus == 0)
        #expect(try await CLITests.job(db, id)["state"] as? String == "succeeded")
    }

    @Test func sigtermAfterTheGracePeriodReleasesTheJob() async throws {
        let store = try TemporaryStore()
        let db = store.path
        let (id, worker, _) = try await Self.workerRunningAJob(
            store, seconds: 300, workerArguments: ["--grace", "300ms"])
        let start = Date()
        kill(worker.processIdentifier, SIGTERM)
        await worker.wait()
        #expect(Date().timeIntervalSince(start) < 120, "well before the job or the wait would have ended on its own")
        #expect(worker.terminationStatus == 0)
        let job = try await CLITests.job(db, id)
        #expect(job["state"] as? String == "ready")
        #expect(job["attempt"] as? Int == 0, "a released job has not used an attempt")
    }

    @Test func aSecondSIGINTExitsAtOnceLeavingTheLeaseToExpire() async throws {
        let store = try TemporaryStore()
        let db = store.path
        let (id, worker, log) = try await Self.workerRunningAJob(
            store, seconds: 300, workerArguments: ["--grace", "600s"])
        kill(worker.processIdentifier, SIGINT)
        try await pause(0.3)
        let start = Date()
        kill(worker.processIdentifier, SIGINT)
        await worker.wait()
        #expect(Date().timeIntervalSince(start) < 120, "it did not wait out the 600s grace period")
        #expect(worker.terminationStatus == 130)
        #expect(try String(contentsOfFile: log, encoding: .utf8).contains("second interrupt"))
        let job = try await CLITests.job(db, id)
        #expect(job["state"] as? String == "running", "the lease stays until it expires")
        // Its command does not run on beside the job's next delivery.
        let command = try #require(
            pid_t(
                try String(contentsOfFile: log + ".started", encoding: .utf8).trimmingCharacters(
                    in: .whitespacesAndNewlines)))
        try await EventProcessTests.waitFor("the job's command to be killed", timeout: 10) { !Self.isRunning(command) }
    }

    /// Whether `process` exists and is not a zombie (a killed command reparented to the test
    /// process, a subreaper, stays one until reaped).
    static func isRunning(_ process: pid_t) -> Bool {
        #if os(Linux)
            guard let stat = try? String(contentsOfFile: "/proc/\(process)/stat", encoding: .utf8),
                let end = stat.lastIndex(of: ")")
            else { return false }
            return stat[stat.index(after: end)...].trimmingCharacters(in: .whitespaces).first != "Z"
        #else
            return kill(process, 0) == 0
        #endif
    }

    @Test func aHungWorkersJobIsTakenOverAndItsLateResultRefused() async throws {
        let store = try TemporaryStore()
        let db = store.path
        let (id, hung, hungLog) = try await Self.workerRunningAJob(
            store, seconds: 3, workerArguments: ["--lease", "1s"], log: "hung.log")
        defer { kill(hung.processIdentifier, SIGKILL) }
        // The worker hangs: no heartbeat, no progress, but it is alive and holds the job.
        kill(hung.processIdentifier, SIGSTOP)
        let rescuer = try await CLI.run(["work", "--until-empty", "--lease", "1s"], db: db)
        #expect(rescuer.status == 0, "\(rescuer.stderr)")
        var job = try await CLITests.job(db, id)
        #expect(job["state"] as? String == "succeeded")
        #expect(job["attempt"] as? Int == 2)
        // The hung worker wakes up and finishes its attempt: the fence refuses it.
        kill(hung.processIdentifier, SIGCONT)
        try await pause(2.5)
        job = try await CLITests.job(db, id)
        #expect(job["state"] as? String == "succeeded")
        #expect(job["attempt"] as? Int == 2, "the late attempt 1 changed nothing")
        let succeeded = try await EventProcessTests.events(db, ["--job", id, "--kind", "succeeded"])
        #expect(succeeded.count == 1, "one success, not two")
        let log = try String(contentsOfFile: hungLog, encoding: .utf8)
        #expect(log.contains("cancelled or taken over"), "the hung worker noticed it lost the job")
    }
}
