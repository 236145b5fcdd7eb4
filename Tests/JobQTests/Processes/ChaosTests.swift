import Foundation
import Testing

/// The chaos run, small: 4 worker processes, 2 producers, a worker killed with SIGKILL every
/// ~300ms, on each store. `swift run -c release jobq-chaos --jobs 20000` is the same with a
/// bigger N (and `--db postgres://...` for PostgreSQL).
///
/// On PostgreSQL the run is larger: its claims and completions commit in separate round trips,
/// so the races between a reclaim and a live worker whose lease expired (an attempt recorded
/// without its start, the "burned" figure) need more jobs to show.
@Suite("Chaos run")
struct ChaosTests {
    /// Runs alone (``RunsAlone``): its kills and restarts of worker processes starve the
    /// timing-sensitive tests beside it, and they it.
    @Test(RunsAlone.trait, arguments: TestStore.all) func nothingAcknowledgedIsLostAndNothingCompletesTwice(
        store: TestStore
    )
        async throws
    {
        // Sized for CI's time (the release run with 10,000 jobs is the thorough one).
        let jobs = store == .postgres ? 800 : 500
        let line = try await Self.run(
            jobs: jobs, arguments: store == .postgres ? ["--db", try await store.location()] : [])
        let integrity = store == .postgres ? "n/a (server)" : "ok"
        #expect(line.contains(" (too early 0), waiting 0, integrity \(integrity), busy errors 0"))
    }

    /// The same on PostgreSQL while the server is restarted (`pg_ctl restart -m fast`) every
    /// fifteen kill rounds, on a cluster of the test's own: workers and applications carry on,
    /// command-line producers run a failed enqueue again (unique keys make it add nothing twice).
    /// Runs alone (``RunsAlone``).
    @Test(RunsAlone.trait, .enabled(if: PostgresTestServer.available, PostgresTestServer.skipReason))
    func nothingIsLostNorDoneTwiceWhileTheServerRestarts() async throws {
        let cluster = try await PrivatePostgresCluster.start()
        defer { Task { await cluster.stop() } }
        let line = try await Self.run(
            jobs: 800, arguments: ["--db", cluster.url, "--restart-server", cluster.restartCommand])
        #expect(line.contains(" (too early 0), waiting 0, integrity n/a (server), busy errors 0"))
        #expect(line.contains("producer failures 0, server restarts "))
        #expect(!line.contains("server restarts 0 "))
    }

    /// Runs `jobq-chaos` and checks what every run must show; returns its line.
    private static func run(jobs: Int, arguments: [String]) async throws -> String {
        let chaos = CLI.binary.deletingLastPathComponent().appendingPathComponent("jobq-chaos")
        let scratch = TestScratch.url("jobq-chaos-test")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let out = scratch.appendingPathComponent("out").path
        let child = try Child(
            executable: chaos,
            arguments: ["--jobs", "\(jobs)", "--kill-every-ms", "300", "--emits", "8"] + arguments,
            environment: [:],
            stdoutPath: out, stderrPath: scratch.appendingPathComponent("err").path)
        await child.wait()
        let line = try String(contentsOfFile: out, encoding: .utf8)
        print(line)
        let errors = (try? String(contentsOfFile: scratch.appendingPathComponent("err").path, encoding: .utf8)) ?? ""
        #expect(
            child.terminationStatus == 0,
            "\(child.terminationReason == .uncaughtSignal ? "killed by signal" : "exit status") \(child.terminationStatus): \(line)\n\(errors.suffix(3000))"
        )
        #expect(line.contains("jobs \(jobs)/\(jobs) acknowledged"))
        #expect(line.contains("attempts burned by jobs that never started: 0 "))
        #expect(line.contains("lost 0, duplicates 0, over-attempts 0, event gaps 0, batch firings 1 (callbacks 1)"))
        #expect(
            line.contains(
                "workflows final once 4/4 (succeeded 4), trees final once 2/2 (succeeded 2, wrong job counts 0)"))
        #expect(
            line.contains(
                "schedule jobs 20/20 (occurrences 20), trigger jobs 8+8/8+8 (once 1, out of order 0), unique jobs "))
        // One job in 10 is a lane job, a shell job or a limited one (see `jobLine`).
        let shellJobs = (0..<jobs).filter { $0 % 80 == 39 }.count
        let laneJobs = (0..<jobs).filter { $0 % 20 == 9 }.count
        let limitedJobs = (0..<jobs).filter { $0 % 10 == 9 }.count - laneJobs - shellJobs
        #expect(
            line.contains(
                " (overlaps 0), lane jobs \(laneJobs) (overlaps 0), shell jobs \(shellJobs) (a killed worker's command beside its job's next attempt 0, "
            ))
        #expect(line.contains("limited jobs \(limitedJobs) (over the limit 0, over the rate 0), cleaned jobs "))
        // Applications enqueueing in their own transactions, some rolled back, some killed.
        #expect(line.contains("orders enqueued in the app's transaction "))
        #expect(line.contains(" lost 0, rolled-back jobs run 0, orders without their job 0, twice 0)"))
        #expect(line.contains("(ran anyway 0, unserved jobs not expired 0)"))
        return line
    }
}
