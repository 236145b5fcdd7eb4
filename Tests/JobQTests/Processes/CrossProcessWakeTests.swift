import Foundation
import Synchronization
import Testing

@testable import JobQCore
@testable import JobQSQL
@testable import JobQSQLite

#if canImport(Glibc)
    import Glibc
#endif

/// Another process's commit wakes an idle pool and an event follower at once, through the
/// OS's report of the write (inotify), not through polling: the polls here are 60s apart, so
/// anything seen within 20 s came from the report.
@Suite("Wake-ups across processes")
struct CrossProcessWakeTests {
    /// A pool that looks at the store on its own only every 60 s and runs no scheduler.
    static var optionsThatDoNotPoll: WorkerPool.Options {
        var options = quickOptions(stopWhen: .never)
        options.pollInterval = .seconds(60)
        options.changeCheckInterval = .seconds(60)
        options.runsScheduler = false
        return options
    }

    #if os(Linux) || os(macOS)
        @Test func anIdlePoolPicksUpAnotherProcesssJobWithoutPolling() async throws {
            let store = try TemporaryStore()
            let queue = try store.open()
            let options = Self.optionsThatDoNotPoll
            let pool = WorkerPool(queue: queue, concurrency: 2, executors: [SumExecutor()], options: options)
            let running = Task { try await pool.run() }
            defer { running.cancel() }
            // Started and idle: its first look at the store found nothing.
            try await pause(0.5)
            for round in 0..<3 {
                let result = try await CLI.run(
                    ["enqueue", "sum", "--payload", #"{"a": \#(round), "b": 1}"#], db: store.path)
                try #require(result.status == 0, "\(result.stderr)")
                let id = try #require(JobID(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)))
                let enqueued = Date()
                try await EventProcessTests.waitFor("job \(id) to be done", timeout: 30) {
                    try await queue.job(id)?.state == .succeeded
                }
                #expect(
                    Date().timeIntervalSince(enqueued) < 20,
                    "round \(round): picked up after \(Date().timeIntervalSince(enqueued))s")
            }
        }

        #if os(Linux)
            /// An idle pool woken by another process's commit claims and starts the job on the
            /// thread that heard the commit (no hand-off to another thread), and that thread is
            /// the pool's own: a job that holds it without ever suspending delays neither another
            /// pool of the process on the same store nor an event follower there.
            @Test func aPoolRunsAWokenJobOnItsWatchersThreadAndAJobHoldingItDelaysNoOtherWatcher() async throws {
                let store = try TemporaryStore()
                let queue = try store.open()
                let options = Self.optionsThatDoNotPoll
                let gate = ThreadHolder()
                let holding = WorkerPool(
                    queue: queue, queues: ["held"], concurrency: 2, executors: [HoldThread(gate: gate)],
                    options: options)
                let other = WorkerPool(
                    queue: queue, queues: ["other"], concurrency: 2, executors: [SumExecutor()], options: options)
                let runs = [Task { try await holding.run() }, Task { try await other.run() }]
                defer { for run in runs { run.cancel() } }
                defer { gate.open() }
                let feed = queue.events(EventFilter(kinds: [.enqueued]), since: nil, pollInterval: .seconds(60))
                let followed = Mutex<[JobID]>([])
                let follower = Task {
                    for try await event in feed { if let id = event.jobID { followed.withLock { $0.append(id) } } }
                }
                defer { follower.cancel() }
                // Started and idle: their first looks at the store found nothing.
                try await pause(0.5)
                let held = try await CLI.run(
                    ["enqueue", "hold-thread", "--any-executor", "--queue", "held", "--payload", "{}"], db: store.path)
                try #require(held.status == 0, "\(held.stderr)")
                try await EventProcessTests.waitFor("the held job to start", timeout: 30) { gate.threadName != nil }
                #expect(gate.threadName == "jobq.file-touch", "the woken job ran on \(gate.threadName ?? "?")")
                let result = try await CLI.run(
                    ["enqueue", "sum", "--queue", "other", "--payload", #"{"a": 1, "b": 2}"#], db: store.path)
                try #require(result.status == 0, "\(result.stderr)")
                let id = try #require(JobID(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)))
                try await EventProcessTests.waitFor("the other pool to run its job", timeout: 30) {
                    try await queue.job(id)?.state == .succeeded
                }
                try await EventProcessTests.waitFor("the follower to see the enqueue", timeout: 30) {
                    followed.withLock { $0.contains(id) }
                }
                #expect(gate.isHeld, "the held job was let go before the others were done")
            }
        #endif

        @Test func anEventFollowerSeesAnotherProcesssCommitWithoutPolling() async throws {
            let store = try TemporaryStore()
            let queue = try store.open()
            let feed = queue.events(EventFilter(kinds: [.enqueued]), since: nil, pollInterval: .seconds(60))
            let first = Task { () -> (JobEvent, Date)? in
                for try await event in feed { return (event, Date()) }
                return nil
            }
            try await pause(0.3)
            let result = try await CLI.run(["enqueue", "sum", "--payload", #"{"a": 1, "b": 2}"#], db: store.path)
            try #require(result.status == 0, "\(result.stderr)")
            let enqueued = Date()
            let timeout = Task {
                try await Task.sleep(for: .seconds(30))
                first.cancel()
            }
            defer { timeout.cancel() }
            let (event, seen) = try #require(try await first.value, "the enqueue was not seen within 30s")
            #expect(event.jobID.map(String.init) == result.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
            #expect(seen.timeIntervalSince(enqueued) < 20, "seen after \(seen.timeIntervalSince(enqueued))s")
        }
    #endif
}

/// What wakes another process: a writer's announcement after its commit, not SQLite's page
/// writes to the WAL (which come before the commit is visible, one per page), and only for
/// commits someone waits for.
@Suite("Commit announcements")
struct CommitAnnouncementTests {
    #if os(Linux) || os(macOS)
        /// Counts a notifier's reports.
        final class Reports: Sendable {
            private let count = Mutex(0)
            func add() { count.withLock { $0 += 1 } }
            var value: Int { count.withLock { $0 } }
        }

        @Test func writesToTheFileAreNotReportedItsTouchesAre() async throws {
            let directory = TestScratch.url("jobq-touch")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: directory) }
            let file = directory.appendingPathComponent("store.sqlite-wal").path
            #expect(FileManager.default.createFile(atPath: file, contents: Data("x".utf8)))
            let reports = Reports()
            let notifier = try #require(
                FileTouchNotifier(path: file, queue: DispatchQueue(label: "test")) { reports.add() })
            defer { notifier.cancel() }
            let handle = try #require(FileHandle(forWritingAtPath: file))
            for _ in 0..<20 { try handle.write(contentsOf: Data(repeating: 1, count: 4096)) }
            try handle.close()
            try await pause(0.3)
            #expect(reports.value == 0, "page writes were reported")
            #expect(utimensat(AT_FDCWD, file, nil, 0) == 0)
            try await EventProcessTests.waitFor("the touch to be reported", timeout: 20) { reports.value >= 1 }
            // Another file in the directory is not this one.
            let other = directory.appendingPathComponent("other.sqlite-wal").path
            #expect(FileManager.default.createFile(atPath: other, contents: nil))
            let before = reports.value
            #expect(utimensat(AT_FDCWD, other, nil, 0) == 0)
            try await pause(0.3)
            #expect(reports.value == before)
        }

        #if os(Linux)
            /// Notifiers of one directory share its listener (one thread, one inotify instance):
            /// each still hears its own file only, and one leaving does not silence the others.
            @Test func notifiersOfOneDirectoryShareItsListenerButEachHearsItsOwnFile() async throws {
                let directory = TestScratch.url("jobq-touch")
                try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
                defer { try? FileManager.default.removeItem(at: directory) }
                let first = directory.appendingPathComponent("a.sqlite-wal").path
                let second = directory.appendingPathComponent("b.sqlite-wal").path
                for file in [first, second] { #expect(FileManager.default.createFile(atPath: file, contents: nil)) }
                let firstReports = Reports()
                let secondReports = Reports()
                let alsoFirstReports = Reports()
                let queue = DispatchQueue(label: "test")
                let firstNotifier = try #require(FileTouchNotifier(path: first, queue: queue) { firstReports.add() })
                let secondNotifier = try #require(FileTouchNotifier(path: second, queue: queue) { secondReports.add() })
                defer { secondNotifier.cancel() }
                let alsoFirst = try #require(FileTouchNotifier(path: first, queue: queue) { alsoFirstReports.add() })
                defer { alsoFirst.cancel() }
                #expect(utimensat(AT_FDCWD, first, nil, 0) == 0)
                try await EventProcessTests.waitFor("both watchers of the first file to hear it", timeout: 20) {
                    firstReports.value >= 1 && alsoFirstReports.value >= 1
                }
                try await pause(0.2)
                #expect(secondReports.value == 0, "a touch of another file was reported")
                // A loaded machine may report one touch twice: counted from here.
                let (firstHeard, alsoFirstHeard) = (firstReports.value, alsoFirstReports.value)
                firstNotifier.cancel()
                #expect(utimensat(AT_FDCWD, second, nil, 0) == 0)
                #expect(utimensat(AT_FDCWD, first, nil, 0) == 0)
                try await EventProcessTests.waitFor("the remaining watchers to hear their files", timeout: 20) {
                    secondReports.value >= 1 && alsoFirstReports.value > alsoFirstHeard
                }
                try await pause(0.2)
                #expect(firstReports.value == firstHeard, "a cancelled watcher was called")
            }

            @Test func aPausedNotifierReportsTouchesAfterThePauseAndACancelledOneNothing() async throws {
                let directory = TestScratch.url("jobq-touch")
                try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
                defer { try? FileManager.default.removeItem(at: directory) }
                let file = directory.appendingPathComponent("store.sqlite-wal").path
                #expect(FileManager.default.createFile(atPath: file, contents: nil))
                let reports = Reports()
                let notifier = try #require(
                    FileTouchNotifier(path: file, queue: DispatchQueue(label: "test")) { reports.add() })
                #expect(utimensat(AT_FDCWD, file, nil, 0) == 0)
                try await EventProcessTests.waitFor("the first touch to be reported", timeout: 20) {
                    reports.value >= 1
                }
                // A loaded machine may deliver the first touch's report twice (one CI run saw 2):
                // what counts is that nothing new comes during the pause.
                try await pause(0.3)
                let beforePause = reports.value
                // Paused: touches wait for the pause to end, then are reported (together). What
                // was reported is read before the time is: a read that the clock then puts
                // inside the pause saw only what came before or during it. (A CI start slept
                // past a 3 s pause: the touches were reported, rightly, after it.)
                let pausedAt = ContinuousClock.now
                notifier.pause(for: .seconds(10))
                for _ in 0..<3 { #expect(utimensat(AT_FDCWD, file, nil, 0) == 0) }
                try await pause(0.3)
                let duringPause = reports.value
                if ContinuousClock.now - pausedAt < .seconds(10) {
                    #expect(duringPause == beforePause, "a touch was reported during the pause")
                }
                try await EventProcessTests.waitFor("the touches to be reported after the pause", timeout: 30) {
                    reports.value > beforePause
                }
                // Cancelled: its thread stops and nothing more is reported.
                notifier.cancel()
                try await pause(0.1)
                let before = reports.value
                #expect(utimensat(AT_FDCWD, file, nil, 0) == 0)
                try await pause(0.3)
                #expect(reports.value == before)
            }
        #endif

        @Test func commitsForNobodyAreNotAnnouncedOthersAre() async throws {
            let store = try TemporaryStore()
            let queue = try store.open()
            let job = try await queue.enqueue(try JobRequest(executor: "sum", payloadJSON: #"{"a":1,"b":2}"#))
            let reports = Reports()
            let notifier = try #require(
                FileTouchNotifier(path: store.path + "-wal", queue: DispatchQueue(label: "test")) { reports.add() })
            defer { notifier.cancel() }
            // A claim without starts and a lease renewal are for nobody else: nothing is announced.
            let claimed = try await queue.store.claim(
                queues: ["default"], limit: 1, workerID: "w", lease: .seconds(30), startingNow: 0)
            #expect(claimed.map(\.id) == [job.id])
            _ = try await queue.store.renewLeases([job.id], workerID: "w", lease: .seconds(30))
            try await pause(0.3)
            #expect(reports.value == 0, "a commit for nobody woke the watchers")
            // An enqueue is for workers and followers: one announcement for the commit.
            try await queue.enqueue(try JobRequest(executor: "sum", payloadJSON: #"{"a":2,"b":2}"#))
            try await EventProcessTests.waitFor("the enqueue to be announced", timeout: 20) { reports.value >= 1 }
            try await pause(0.2)
            #expect(reports.value == 1, "one commit, \(reports.value) reports")
        }
    #endif
}

#if os(Linux)
    /// Holds the thread a ``HoldThread`` job runs on, without suspending, until opened (or for
    /// 60 s at most), and records that thread's name.
    final class ThreadHolder: Sendable {
        private struct State {
            var opened = false
            var threadName: String?
            var holding = false
        }
        private let state = Mutex(State())

        func open() { state.withLock { $0.opened = true } }
        var threadName: String? { state.withLock { $0.threadName } }
        var isHeld: Bool { state.withLock { $0.holding } }

        func hold() {
            // The name the OS shows for this thread (Foundation's `Thread.name` is not it).
            let threadName =
                (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8))?
                .trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
            state.withLock {
                $0.threadName = threadName
                $0.holding = true
            }
            // A bound for a test that never opens it, past the test's own waits (three of up to
            // 30 s after the hold starts): on a loaded machine a 60 s bound ran out before the
            // other pool had run its job, and the hold ended early.
            let deadline = ContinuousClock.now + .seconds(180)
            while !state.withLock({ $0.opened }), ContinuousClock.now < deadline { usleep(1000) }
            state.withLock { $0.holding = false }
        }
    }

    /// A job that holds its thread (never suspends) until its test lets it go.
    struct HoldThread: Executor {
        static let name = "hold-thread"
        let gate: ThreadHolder
        func run(_ input: [String: Int], context: JobContext) async throws -> [String: Int] {
            gate.hold()
            return [:]
        }
    }
#endif
