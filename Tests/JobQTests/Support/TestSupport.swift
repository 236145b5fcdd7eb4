import Foundation
import GRDB
import Logging
import Synchronization
import Testing

@testable import JobQCore
@testable import JobQSQL
@testable import JobQSQLite

/// Names in the temporary directory for what the tests make, removed when the test process
/// exits, whether its tests passed or failed (a test cannot remove a store a worker it started
/// may still hold, so they go together at the end).
enum TestScratch {
    private static let made = Mutex<[URL]>([])
    private static let removal: Void = {
        atexit { TestScratch.removeAll() }
    }()

    /// A new path `PREFIX-UUID` (plus `suffix`) in the temporary directory, removed at exit.
    static func url(_ prefix: String, suffix: String = "") -> URL {
        _ = removal
        _ = StallWatch.started
        let url = FileManager.default.temporaryDirectory.appendingPathComponent(
            "\(prefix)-\(UUID().uuidString)\(suffix)")
        made.withLock { $0.append(url) }
        return url
    }

    private static func removeAll() {
        for url in made.withLock({ $0 }) { try? FileManager.default.removeItem(at: url) }
    }
}

/// A fresh store file in its own temporary directory.
struct TemporaryStore {
    let directory: URL
    var path: String { directory.appendingPathComponent("jobq.sqlite").path }

    init() throws {
        directory = TestScratch.url("jobq-tests")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    /// Opens the store, first copied from a migrated template when the file is not there yet.
    ///
    /// Migrating a new file commits (and syncs) once per migration: about half a second of
    /// waiting on the disk, in the calling thread. Tests open stores from Swift's concurrency
    /// pool (two threads on two cores), and dozens of them doing so at the start of a run held
    /// both threads for tens of seconds, so that tests waiting for a worker or a server timed
    /// out. A copy is one file write; the store it opens is the same, migrated to the latest
    /// version. (A test of migrating a new file names `path` to the CLI without opening it.)
    func open() throws -> JobQueue {
        if !FileManager.default.fileExists(atPath: path) {
            try FileManager.default.copyItem(atPath: try Self.template.get(), toPath: path)
            // As private as a store jobq makes.
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
        }
        return try JobQueue(path: path)
    }

    /// A store file migrated once per test process (from the in-memory template: no syncs).
    private static let template: Result<String, any Error> = Result {
        let directory = TestScratch.url("jobq-template")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let path = directory.appendingPathComponent("jobq.sqlite").path
        var config = Configuration()
        config.prepareDatabase { db in SQLiteStore.addFunctions(db) }
        try InMemoryTemplate.copy(to: try DatabaseQueue(path: path, configuration: config))
        return path
    }
}

/// Runs `body` on a thread of its own and awaits it. Opening an SQLite store migrates it in
/// the calling thread; hundreds of tests doing that at once on the two threads of Swift's
/// concurrency pool (two cores) would hold them for seconds, and every test waiting for a
/// worker or a server meanwhile would time out.
func offTheTestPool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread.detachNewThread { continuation.resume(with: Result { try body() }) }
    }
}

/// Pool options that make tests quick: short polls, short backoff, short lease.
func quickOptions(stopWhen: StopCondition = .allJobsFinished) -> WorkerPool.Options {
    var options = WorkerPool.Options()
    options.pollInterval = .milliseconds(50)
    options.retryBackoff = RetryBackoff(base: .milliseconds(20), maximum: .milliseconds(200), jitter: 0)
    options.lease = .seconds(15)
    options.prefetch = 64
    options.stopWhen = stopWhen
    return options
}

struct TimedOut: Error, CustomStringConvertible {
    let what: String
    var description: String { "timed out waiting for \(what)" }
}

/// Runs `body`, failing if it takes longer than `limit`.
///
/// On time-out it throws at once and leaves `body` cancelled but running: a body stuck in
/// something that ignores cancellation (say, a pool that never stops) fails its test with a
/// message instead of hanging the whole run, as waiting for it in a task group would.
func within<T: Sendable>(
    _ limit: Duration, _ what: String = "the operation", _ body: @escaping @Sendable () async throws -> T
) async throws -> T {
    let race = WithinRace<T>()
    return try await withTaskCancellationHandler {
        try await withCheckedThrowingContinuation { continuation in
            race.start(continuation, limit: limit, what: what, body)
        }
    } onCancel: {
        race.cancelWork()
    }
}

/// The state of one ``within(_:_:_:)``: whichever of the body and the timer ends first resumes
/// the caller, once.
private final class WithinRace<T: Sendable>: Sendable {
    private let continuation = Mutex<CheckedContinuation<T, any Error>?>(nil)
    private let work = Mutex<Task<Void, Never>?>(nil)
    private let timer = Mutex<Task<Void, Never>?>(nil)

    func start(
        _ continuation: CheckedContinuation<T, any Error>, limit: Duration, what: String,
        _ body: @escaping @Sendable () async throws -> T
    ) {
        self.continuation.withLock { $0 = continuation }
        let work = Task {
            let result = await Result { try await body() }
            if self.finish(result) { self.timer.withLock { $0?.cancel() } }
        }
        self.work.withLock { $0 = work }
        let timer = Task {
            try? await Task.sleep(for: limit)
            guard !Task.isCancelled else { return }
            if self.finish(.failure(TimedOut(what: what))) { self.cancelWork() }
        }
        self.timer.withLock { $0 = timer }
    }

    func cancelWork() { work.withLock { $0?.cancel() } }

    private func finish(_ result: Result<T, any Error>) -> Bool {
        guard
            let continuation = continuation.withLock({ state -> CheckedContinuation<T, any Error>? in
                defer { state = nil }
                return state
            })
        else { return false }
        continuation.resume(with: result)
        return true
    }
}

extension Result where Failure == any Error {
    /// The result of an async throwing body.
    init(_ body: () async throws -> Success) async {
        do { self = .success(try await body()) } catch { self = .failure(error) }
    }
}

/// Runs a pool on `queue` until its stop condition holds (by default: every job final).
@discardableResult
func work(
    _ queue: JobQueue, executors: [any Executor] = BuiltinExecutors.all, queues: [String] = ["default"],
    concurrency: Int = 4, migrators: [any DataMigrator] = [], options: WorkerPool.Options = quickOptions(),
    limit: Duration = .seconds(90)
) async throws -> WorkerPool.Statistics {
    let pool = WorkerPool(
        queue: queue, queues: queues, concurrency: concurrency, executors: executors, migrators: migrators,
        options: options)
    try await within(limit, "the pool to finish") { try await pool.run() }
    return pool.statistics
}

/// Polls until `condition` holds.
func eventually(
    _ limit: Duration = .seconds(10), _ what: String, _ condition: @escaping @Sendable () async throws -> Bool
) async throws {
    let deadline = ContinuousClock.now + limit
    while ContinuousClock.now < deadline {
        if try await condition() { return }
        try await Task.sleep(for: .milliseconds(20))
    }
    // Once more after the deadline: a task starved by a loaded machine may wake only after it.
    if try await condition() { return }
    throw TimedOut(what: what)
}

struct Sum: Executor {
    static let name = "test-sum"
    struct Input: Codable, Sendable {
        var a: Int
        var b: Int
    }
    struct Output: Codable, Sendable, Equatable { var sum: Int }
    func run(_ input: Input, context: JobContext) async throws -> Output { Output(sum: input.a + input.b) }
}

/// Runs blocking work on a thread of its own, so that it does not hold one of the few threads
/// Swift concurrency runs every test's tasks on. The thread starts here, at once: started from
/// a task, it waited for a free thread of that pool, which a loaded parallel run may not have
/// for many seconds (a migrator meant to hold the write lock "now" had not begun 20 s later).
func onThread<T: Sendable>(_ work: @escaping @Sendable () throws -> T) -> Task<T, any Error> {
    let outcome = ThreadOutcome<T>()
    Thread.detachNewThread { outcome.finish(Result { try work() }) }
    return Task { try await outcome.value() }
}

/// The result of ``onThread(_:)``'s work, whichever comes first: the result or its awaiter.
final class ThreadOutcome<T: Sendable>: Sendable {
    private enum State {
        case running
        case waiting(CheckedContinuation<T, any Error>)
        case done(Result<T, any Error>)
    }
    private let state = Mutex<State>(.running)

    func finish(_ result: Result<T, any Error>) {
        let waiter = state.withLock { state -> CheckedContinuation<T, any Error>? in
            if case .waiting(let continuation) = state {
                state = .done(result)
                return continuation
            }
            state = .done(result)
            return nil
        }
        waiter?.resume(with: result)
    }

    func value() async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            let done = state.withLock { state -> Result<T, any Error>? in
                if case .done(let result) = state { return result }
                state = .waiting(continuation)
                return nil
            }
            if let done { continuation.resume(with: done) }
        }
    }
}

/// Keeps every message logged through it.
final class LogRecorder: LogHandler, @unchecked Sendable {
    private let lock = Mutex<[String]>([])
    var messages: [String] { lock.withLock { $0 } }
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .info
    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }
    func log(event: LogEvent) {
        lock.withLock { $0.append("\(event.message)") }
    }
}

extension Collection<Job> {
    /// The most of these jobs that ran at once, from their recorded start and finish times: a
    /// sweep over every start (+1) and finish (-1), finishes first at equal times.
    var mostAtOnce: Int {
        let edges = flatMap { job -> [(Double, Int)] in
            [
                (job.startedAt?.timeIntervalSince1970 ?? 0, 1),
                (job.finishedAt?.timeIntervalSince1970 ?? .infinity, -1)
            ]
        }.sorted { ($0.0, $0.1) < ($1.0, $1.1) }
        var running = 0
        var most = 0
        for (_, change) in edges {
            running += change
            most = Swift.max(most, running)
        }
        return most
    }
}
