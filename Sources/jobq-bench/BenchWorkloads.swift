import Foundation
import GRDB
import JobQ
import JobQCommandLine
import Logging

/// The jobq side of `jobq bench`: each workload on a fresh store in a scratch directory.
struct BenchWorkloads {
    let directory: URL
    var storeCount = 0
    /// The process's CPU seconds per job (or per application transaction) of the last
    /// workload that measures it.
    var lastCPUPerItem = 0.0
    /// `.full` measures with synchronous=FULL (jobq and the raw baseline alike).
    var durability: Durability = .normal

    var workerFlags: [String] { durability == .full ? ["--durable"] : [] }

    func open(_ path: String) throws -> JobQueue { try JobQueue(path: path, durability: durability) }

    func rawStore(_ path: String) throws -> RawSQLite { try RawSQLite(path: path, durable: durability == .full) }

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "jobq-bench-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    func cleanUp() { try? FileManager.default.removeItem(at: directory) }

    mutating func freshPath() -> String {
        storeCount += 1
        return directory.appendingPathComponent("store-\(storeCount).sqlite").path
    }

    static func sumRequest(_ index: Int) throws -> JobRequest {
        try JobRequest(executor: SumExecutor.name, payloadJSON: #"{"a":\#(index),"b":1}"#)
    }

    /// ``sumRequest(_:)`` whose payload also carries `"c"`: the index modulo `partitions`
    /// (or no `c` without `partitions`).
    static func sumRequest(_ index: Int, partitions: Int?) throws -> JobRequest {
        guard let partitions else { return try sumRequest(index) }
        return try JobRequest(
            executor: SumExecutor.name, payloadJSON: #"{"a":\#(index),"b":1,"c":\#(index % partitions)}"#)
    }

    /// The limits of the bench's partitioned drain: 5 at once per value of the payload's `c`.
    static let partitionedLimits = QueueLimits(concurrency: 5, partitionBy: .payload("/c"))

    /// Enqueues one job per transaction. Returns jobs per second; ``lastCPUPerItem`` is the
    /// process's CPU per job meanwhile.
    mutating func enqueueOneAtATime(_ count: Int) async throws -> Double {
        let queue = try open(freshPath())
        let requests = try (0..<count).map(Self.sumRequest)
        let cpu = ProcessCPU.now()
        let start = ContinuousClock.now
        for request in requests { try await queue.enqueue(request) }
        lastCPUPerItem = (ProcessCPU.now() - cpu) / Double(count)
        return Double(count) / (ContinuousClock.now - start).inSeconds
    }

    /// An application's transactions on the store's file (its own GRDB pool), each writing an
    /// order row and `extra` more: `jobs` (enqueued in the same transaction, one call for all)
    /// or the application's own rows (`.rows`, the baseline). Returns the extra items per
    /// second; with `.none`, transactions per second: the application's own cost.
    mutating func appTransactions(_ count: Int, extra: AppTransactionExtra = .none) async throws -> Double {
        let path = freshPath()
        let queue = try open(path)
        var configuration = Configuration()
        configuration.busyMode = .timeout(10)
        if durability == .full { configuration.prepareDatabase { try $0.execute(sql: "PRAGMA synchronous = FULL") } }
        let pool = try DatabasePool(path: path, configuration: configuration)
        defer { try? pool.close() }
        try await pool.write {
            try $0.execute(sql: "CREATE TABLE app_orders (id INTEGER PRIMARY KEY, note TEXT NOT NULL)")
        }
        let perTransaction = extra.count
        let transactions = max(1, count / max(1, perTransaction))
        let requests = try (0..<(transactions * perTransaction)).map(Self.sumRequest)
        let cpu = ProcessCPU.now()
        let start = ContinuousClock.now
        for index in 0..<transactions {
            try await pool.write { db in
                try db.execute(sql: "INSERT INTO app_orders (note) VALUES ('order')")
                switch extra {
                case .none: break
                case .jobs(let n):
                    let mine = requests[(index * n)..<((index + 1) * n)]
                    if n == 1 {
                        try queue.enqueue(mine.first!, in: db)
                    } else {
                        try queue.enqueue(contentsOf: mine, in: db)
                    }
                case .rows(let n):
                    let insert = try db.cachedStatement(sql: "INSERT INTO app_orders (note) VALUES ('line')")
                    for _ in 0..<n { try insert.execute() }
                case .jobRowsRaw(let n):
                    let insert = try db.cachedStatement(sql: Self.rawJobInsert)
                    let now = Date().timeIntervalSince1970
                    for request in requests[(index * n)..<((index + 1) * n)] {
                        try insert.execute(arguments: [request.payloadJSON, now, now, Self.rawEnqueuedData])
                    }
                }
            }
        }
        let seconds = (ContinuousClock.now - start).inSeconds
        lastCPUPerItem = (ProcessCPU.now() - cpu) / Double(transactions)
        return Double(transactions * max(1, perTransaction)) / seconds
    }

    /// A ready `sum` job's row as jobq's enqueue writes it on SQLite, for ``AppTransactionExtra/jobRowsRaw(_:)``.
    static let rawJobInsert = """
        INSERT INTO jobq_jobs (queue, executor, payload, priority, state, max_attempts, run_at, created_at, enqueued_data)
        VALUES ('default', 'sum', ?, 0, 'ready', 3, ?, ?, ?)
        """
    static let rawEnqueuedData = #"{"state":"ready","runAt":"2026-01-01T00:00:00.000Z","priority":0}"#

    /// Enqueues in batches of 1,000 with `enqueue(contentsOf:)`. Returns jobs per second.
    mutating func enqueueInBulk(_ count: Int) async throws -> Double {
        let queue = try open(freshPath())
        let requests = try (0..<count).map(Self.sumRequest)
        let start = ContinuousClock.now
        var index = 0
        while index < count {
            try await queue.enqueue(contentsOf: requests[index..<min(index + 1000, count)])
            index += 1000
        }
        return Double(count) / (ContinuousClock.now - start).inSeconds
    }

    /// A store holding `count` ready `sum` jobs, its write-ahead log folded into the file, as
    /// the raw baseline's store is: the drain measured next does not pay for the setup.
    /// With `partitions`, each payload also carries `"c"`, its job's index modulo `partitions`.
    mutating func backlog(_ count: Int, partitions: Int? = nil) async throws -> (JobQueue, String) {
        let path = freshPath()
        let queue = try open(path)
        var index = 0
        while index < count {
            try await queue.enqueue(
                contentsOf: try (index..<min(index + 1000, count)).map {
                    try Self.sumRequest($0, partitions: partitions)
                })
            index += 1000
        }
        try rawStore(path).exec("PRAGMA wal_checkpoint(TRUNCATE)")
        return (queue, path)
    }

    /// Drains every ready job of `queue` in this process. Returns jobs per second.
    static func drain(_ queue: JobQueue, jobs: Int, concurrency: Int, history: Bool = true) async throws -> Double {
        var options = WorkerPool.Options()
        options.stopWhen = .queuesEmpty
        if !history { options.historyInterval = nil }
        var logger = Logger(label: "jobq.bench")
        logger.logLevel = .error
        let pool = WorkerPool(
            queue: queue, concurrency: concurrency, executors: [SumExecutor()], options: options, logger: logger)
        let start = ContinuousClock.now
        try await pool.run()
        let elapsed = (ContinuousClock.now - start).inSeconds
        guard pool.statistics.succeeded == jobs else {
            throw CLIError.failure("bench: drained \(pool.statistics.succeeded) of \(jobs) jobs")
        }
        return Double(jobs) / elapsed
    }

    /// Drains a fresh backlog of `count` jobs in this process. Returns jobs per second.
    /// Without `history`, the pool records none (``WorkerPool/Options/historyInterval`` nil):
    /// what the history costs a drain.
    mutating func drainInProcess(_ count: Int, concurrency: Int, history: Bool = true) async throws -> Double {
        let (queue, _) = try await backlog(count)
        let cpu = ProcessCPU.now()
        let rate = try await Self.drain(queue, jobs: count, concurrency: concurrency, history: history)
        lastCPUPerItem = (ProcessCPU.now() - cpu) / Double(count)
        return rate
    }

    /// Drains a backlog through a separate `jobq work --until-empty` process, its queue under
    /// `limits` if given (over `partitions` values of the payload's `c`). Returns jobs per
    /// second, the process's start-up included.
    mutating func drainThroughWorkerProcess(_ count: Int, limits: QueueLimits? = nil, partitions: Int? = nil)
        async throws -> Double
    {
        let (queue, path) = try await backlog(count, partitions: partitions)
        if let limits { try await queue.setLimits(limits, for: "default") }
        let start = ContinuousClock.now
        let child = try BenchChild(["--db", path] + workerFlags + ["work", "--until-empty", "--concurrency", "4"])
        let (status, _, cpu) = await child.waitMeasured()
        let elapsed = (ContinuousClock.now - start).inSeconds
        // The worker process's own CPU, start-up included, per job.
        lastCPUPerItem = cpu / Double(count)
        let done = try await queue.status().queues.first?.counts["succeeded"] ?? 0
        guard status == 0, done == count else {
            throw CLIError.failure("bench: the worker process exited \(status) after \(done) of \(count) jobs")
        }
        return Double(count) / elapsed
    }

    /// Milliseconds from enqueue to the succeeded event being visible to the producer, for `count`
    /// jobs one after the other, with an idle worker in this process or in another one; and
    /// from the enqueue's commit to the worker's (`pickedUpAndDone`: the jobs' own created_at
    /// and finished_at, both stamped inside their transactions), which is the trip one way.
    /// With `path`, on that store, the worker process started with `workerArguments` too, and
    /// `ready` awaited before the first sample.
    mutating func latency(
        _ count: Int, crossProcess: Bool, path given: String? = nil, workerArguments: [String] = [],
        ready: (@Sendable () async throws -> Void)? = nil
    ) async throws -> (roundTrip: [Double], pickedUpAndDone: [Double]) {
        let path = given ?? freshPath()
        let queue = try open(path)
        var child: BenchChild?
        var poolTask: Task<Void, any Error>?
        if crossProcess {
            child = try BenchChild(["--db", path] + workerFlags + ["work", "--concurrency", "4"] + workerArguments)
            // Let the worker start and go idle.
            try await queue.enqueue(try Self.sumRequest(0))
            for try await event in queue.events(
                EventFilter(kinds: [.succeeded]), since: 0, pollInterval: .milliseconds(1))
            {
                _ = event
                break
            }
        } else {
            var logger = Logger(label: "jobq.bench")
            logger.logLevel = .error
            let pool = WorkerPool(queue: queue, concurrency: 4, executors: [SumExecutor()], logger: logger)
            poolTask = Task { try await pool.run() }
            try await Task.sleep(for: .milliseconds(100))
        }
        defer {
            poolTask?.cancel()
            child?.terminate()
        }
        try await ready?()
        var samples: [Double] = []
        var ids: [JobID] = []
        let feed = queue.events(
            EventFilter(kinds: [.succeeded]), since: try await queue.latestEventID(), pollInterval: .milliseconds(1))
        var iterator = feed.makeAsyncIterator()
        for index in 0..<count {
            let start = ContinuousClock.now
            let job = try await queue.enqueue(try Self.sumRequest(index))
            while let event = try await iterator.next(), event.jobID != job.id {}
            samples.append((ContinuousClock.now - start).inSeconds * 1000)
            ids.append(job.id)
            // Idle between jobs, so each one measures a wake-up from idle.
            try await Task.sleep(for: .milliseconds(5))
        }
        if let child {
            child.terminate()
            _ = await child.wait()
        }
        var oneWay: [Double] = []
        for id in ids {
            guard let job = try await queue.job(id), let finished = job.finishedAt else { continue }
            oneWay.append(finished.timeIntervalSince(job.createdAt) * 1000)
        }
        return (samples, oneWay)
    }

    /// Pick-up latency across processes (round trips, ms) beside the cleaner deleting `finished`
    /// succeeded jobs past their retention, and without it (`--no-cleaner`) on the same kind of
    /// store; and whether the cleaner was still deleting when the last sample was taken.
    mutating func latencyBesideCleaner(_ count: Int, finished: Int) async throws -> BenchCommand.CleanerLatency {
        func store() async throws -> (String, JobQueue) {
            let path = freshPath()
            let queue = try open(path)
            try rawStore(path).fill(count: finished, state: "succeeded", runAtOffset: -3600)
            try await queue.setRetention(QueueRetention(succeeded: .seconds(1)), for: "default")
            return (path, queue)
        }
        let (quietPath, _) = try await store()
        let quiet = try await latency(count, crossProcess: true, path: quietPath, workerArguments: ["--no-cleaner"])
        let (path, queue) = try await store()
        // The samples start once the cleaner has begun (its first pass comes a few seconds
        // after the worker starts).
        let cleaning = try await latency(count, crossProcess: true, path: path) {
            let deadline = ContinuousClock.now + .seconds(60)
            while ContinuousClock.now < deadline {
                let left = try await queue.status().queues.first { $0.name == "default" }?.counts["succeeded"] ?? 0
                if left < finished { return }
                try await Task.sleep(for: .milliseconds(100))
            }
            throw CLIError.failure("bench: the cleaner deleted nothing within 60s")
        }
        let left = try await queue.status().queues.first { $0.name == "default" }?.counts["succeeded"] ?? 0
        return BenchCommand.CleanerLatency(cleaning: cleaning.roundTrip, quiet: quiet.roundTrip, overlapped: left > 0)
    }

    /// The CPU an idle `jobq work` uses over `seconds`, in percent of one core: what waiting
    /// for work costs (the wake-ups on other processes' commits come from the OS, so none of it
    /// should be polling). nil where the kernel does not report a process's CPU time (/proc).
    mutating func idleWorkerCPU(seconds: Int) async throws -> Double? {
        try await idleWorker(seconds: seconds)?.cpu
    }

    /// An idle `jobq work`'s CPU over `seconds` (percent of a core) and its peak resident memory
    /// (bytes), beside `sleepingFunctions` durable functions parked in a day-long sleep; nil
    /// without /proc.
    mutating func idleWorker(seconds: Int, sleepingFunctions: Int = 0) async throws -> (cpu: Double, rss: Int)? {
        let path = freshPath()
        let queue = try open(path)
        if sleepingFunctions > 0 { try await Self.parkSleepers(queue, count: sleepingFunctions) }
        let child = try BenchChild(["--db", path] + workerFlags + ["work", "--concurrency", "4"])
        defer { child.terminate() }
        // Let the worker start (one job done) and settle.
        try await queue.enqueue(try Self.sumRequest(0))
        for try await event in queue.events(EventFilter(kinds: [.succeeded]), since: 0) {
            _ = event
            break
        }
        try await Task.sleep(for: .milliseconds(500))
        guard let before = child.cpuSeconds() else { return nil }
        try await Task.sleep(for: .seconds(seconds))
        guard let after = child.cpuSeconds() else { return nil }
        let rss = BenchChild.highWaterMark(child.pid) ?? 0
        child.terminate()
        _ = await child.wait()
        return ((after - before) / Double(seconds) * 100, rss)
    }

    /// Claim throughput on a store that also holds `finished` succeeded jobs and `future` jobs
    /// scheduled later, as a ratio of the same drain on an otherwise empty store.
    ///
    /// Two rounds, empty then full each time, and the better figure of each: both sides are
    /// jobq drains, and a single pair moves by a fifth on a shared machine.
    mutating func flatCost(finished: Int, future: Int, drain: Int) async throws -> (empty: Double, full: Double) {
        let path = freshPath()
        _ = try open(path)
        do {
            let raw = try rawStore(path)
            try raw.fill(count: finished, state: "succeeded", runAtOffset: -3600)
            try raw.fill(count: future, state: "scheduled", runAtOffset: 86_400)
        }
        let fullQueue = try open(path)
        var empty = 0.0
        var full = 0.0
        for _ in 0..<2 {
            let (emptyQueue, _) = try await backlog(drain)
            empty = max(empty, try await Self.drain(emptyQueue, jobs: drain, concurrency: 4))
            var index = 0
            while index < drain {
                try await fullQueue.enqueue(contentsOf: try (index..<min(index + 1000, drain)).map(Self.sumRequest))
                index += 1000
            }
            full = max(full, try await Self.drain(fullQueue, jobs: drain, concurrency: 4))
        }
        return (empty, full)
    }

    /// Peak resident memory (bytes) of a `jobq work` process working through `jobs` jobs of a
    /// `backlog`-job store.
    mutating func peakMemory(backlog: Int, jobs: Int) async throws -> Int {
        let path = freshPath()
        _ = try open(path)
        try rawStore(path).fill(count: backlog, state: "ready", runAtOffset: -1)
        let child = try BenchChild(
            ["--db", path] + workerFlags + ["work", "--concurrency", "4", "--max-jobs", String(jobs)])
        let (status, peak) = await child.wait()
        guard status == 0 else { throw CLIError.failure("bench: the memory worker exited \(status)") }
        return peak
    }

    /// The minimal raw queue on a fresh file: single-insert commits, then claim+complete of
    /// `jobs` in batches of 100.
    mutating func minimalRaw(inserts: Int, drain jobs: Int) throws -> (
        insertsPerSecond: Double, drainedPerSecond: Double
    ) {
        let queue = try MinimalRawQueue(path: freshPath(), durable: durability == .full)
        let insertRate = try queue.insert(count: inserts)
        // The drain takes the single inserts too: top them up to `jobs` in one go.
        _ = try queue.insert(count: max(0, jobs - inserts), batch: 1000)
        let cpu = ProcessCPU.now()
        let (done, drainRate) = try queue.claimAndComplete(batch: 100)
        guard done == max(jobs, inserts) else {
            throw CLIError.failure("minimal raw queue: drained \(done) of \(max(jobs, inserts))")
        }
        lastCPUPerItem = (ProcessCPU.now() - cpu) / Double(done)
        return (insertRate, drainRate)
    }

    /// Raw SQLite on a fresh jobq-shaped store: inserts and claim+complete at the given batch.
    mutating func raw(inserts: Int, insertBatch: Int, events: Bool = true) throws -> Double {
        let path = freshPath()
        _ = try open(path)
        return try rawStore(path).insert(count: inserts, batch: insertBatch, events: events)
    }

    mutating func raw(claimComplete jobs: Int, batch: Int, events: Bool = true) throws -> Double {
        try raw(claimComplete: jobs, batch: batch, variant: RawVariant(events: events))
    }

    /// What one promise costs SQLite: jobq's statements without it (`jobq bench --breakdown`).
    struct RawVariant {
        var events = true
        var storesResult = true
        /// Indexes dropped from the fresh store before the run.
        var droppedIndexes: [String] = []
    }

    mutating func raw(inserts: Int, variant: RawVariant) throws -> Double {
        let path = freshPath()
        _ = try open(path)
        let raw = try rawStore(path)
        for index in variant.droppedIndexes { try raw.exec("DROP INDEX \(index)") }
        return try raw.insert(count: inserts, batch: 1, events: variant.events)
    }

    mutating func raw(claimComplete jobs: Int, batch: Int, variant: RawVariant) throws -> Double {
        let path = freshPath()
        _ = try open(path)
        let raw = try rawStore(path)
        for index in variant.droppedIndexes { try raw.exec("DROP INDEX \(index)") }
        try raw.fill(count: jobs, state: "ready", runAtOffset: -1)
        let (done, rate) = try raw.claimAndComplete(
            batch: batch, events: variant.events, storesResult: variant.storesResult)
        guard done == jobs else { throw CLIError.failure("raw SQLite: drained \(done) of \(jobs)") }
        return rate
    }
}

func percentile(_ samples: [Double], _ p: Double) -> Double {
    guard !samples.isEmpty else { return .nan }
    let sorted = samples.sorted()
    let rank = Int((p / 100 * Double(sorted.count - 1)).rounded())
    return sorted[min(max(rank, 0), sorted.count - 1)]
}

/// What an application's transaction writes beside its order row, in the bench.
enum AppTransactionExtra {
    case none
    /// Jobs, enqueued in the transaction with one call.
    case jobs(Int)
    /// Rows of the application's own (the baseline of a batch of jobs).
    case rows(Int)
    /// Job rows as jobq's enqueue writes them (its `enqueued` event in the row), inserted by the
    /// application's own statement: SQLite's work for the job with no jobq code, the floor an
    /// enqueue in the application's transaction can come down to.
    case jobRowsRaw(Int)

    var count: Int {
        switch self {
        case .none: 0
        case .jobs(let n), .rows(let n), .jobRowsRaw(let n): n
        }
    }
}

/// The CPU time (user + system) this process has used, in seconds.
enum ProcessCPU {
    static func now() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1_000_000 }
        return seconds(usage.ru_utime) + seconds(usage.ru_stime)
    }
}
