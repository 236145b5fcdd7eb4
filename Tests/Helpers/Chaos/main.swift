// The chaos run: several `jobq work` processes and producers on one store, while a worker is
// killed with SIGKILL every few hundred milliseconds and restarted. At the end it checks what a
// durable queue promises and prints one line of figures:
//
//   jobs, kills, re-deliveries, lost, duplicates, over-attempts, event gaps, batch firings,
//   orders and jobs of applications enqueueing in their own transactions (some rolled back,
//   some producers killed mid-transaction): each committed order's job once, no other job,
//   workflows and trees final exactly once, trees holding exactly their jobs, one job per
//   schedule occurrence, trigger jobs once per deduped emit and in dependency order, unique keys
//   never held twice at once, lane order, a queue's concurrency limit never passed, durable
//   functions (steps, sleeps, signals, calls) finished once with their record intact, jobs left
//   waiting, jobs past their deadline to start ended unrun, a shell job's command never running
//   beside its own next attempt (a killed worker's command outlives it), integrity, busy errors
//   seen by users
//
// and exits 1 if any promise was broken.
//
//   swift run -c release jobq-chaos --jobs 20000 [--workers 4] [--producers 2] [--kill-every-ms 300] [--emits N]
//       [--db postgres://user@host:port/database [--restart-server COMMAND]]
//
// It runs the `jobq` binary next to itself (build it first: `swift build -c release --traits
// Postgres`). With --db, the store is that PostgreSQL database (empty, or made empty by the
// caller) instead of a new SQLite file; every check is the same. With --restart-server, the
// shell COMMAND restarts that server (`pg_ctl restart -m fast`: every session ended) every
// fifteen kill rounds: the workers and the application producers (through the API) carry on
// through it. A `jobq` command that finds no server fails at once (it was never connected), and
// one whose statement the restart cut cannot know its outcome: so the command-line producers'
// commands and the restarts take turns (two lock files: a restart waits for the commands running
// and holds new ones at a gate until the server is back).

import Foundation
import GRDB
import JobQ
import JobQPostgres
import Synchronization

// A producer process of the run's own: an application enqueueing in its own transactions.
if CommandLine.arguments.count > 1, CommandLine.arguments[1] == "app-producer" {
    func value(_ name: String) -> String {
        guard let index = CommandLine.arguments.firstIndex(of: name), index + 1 < CommandLine.arguments.count else {
            fatalError("app-producer needs \(name)")
        }
        return CommandLine.arguments[index + 1]
    }
    let (db, name, out) = (value("--db"), value("--name"), value("--out"))
    let locks = CommandLine.arguments.firstIndex(of: "--locks").map { CommandLine.arguments[$0 + 1] }
    Task.detached {
        do {
            try await AppProducer.run(db: db, name: name, out: out, locks: locks)
            exit(0)
        } catch {
            FileHandle.standardError.write(Data("app-producer: \(error)\n".utf8))
            exit(1)
        }
    }
    dispatchMain()
}

// A worker process of durable functions (FunctionWorker.swift), killed like the others.
if CommandLine.arguments.count > 1, CommandLine.arguments[1] == "function-worker" {
    guard let index = CommandLine.arguments.firstIndex(of: "--db"), index + 1 < CommandLine.arguments.count else {
        fatalError("function-worker needs --db")
    }
    let db = CommandLine.arguments[index + 1]
    let locks = CommandLine.arguments.firstIndex(of: "--locks").map { CommandLine.arguments[$0 + 1] }
    Task.detached {
        do {
            try await ChaosFunctions.runWorker(db: db, locks: locks)
            exit(0)
        } catch {
            FileHandle.standardError.write(Data("function-worker: \(error)\n".utf8))
            exit(1)
        }
    }
    dispatchMain()
}

struct Options {
    var jobs = 2000
    var workers = 4
    var producers = 2
    var killEvery = 300
    var seed: UInt64 = 7
    /// Emits per emitter (each also enqueues one unique job); default jobs / 250, at least 20.
    var emits: Int?
    /// A PostgreSQL URL to run against instead of a new SQLite file.
    var postgres: String?
    /// A shell command that restarts the PostgreSQL server, run every fifteen kill rounds.
    var restartServer: String?

    init(_ arguments: [String]) {
        var index = 1
        while index + 1 < arguments.count {
            let value = arguments[index + 1]
            switch arguments[index] {
            case "--jobs": jobs = Int(value) ?? jobs
            case "--workers": workers = Int(value) ?? workers
            case "--producers": producers = Int(value) ?? producers
            case "--kill-every-ms": killEvery = Int(value) ?? killEvery
            case "--seed": seed = UInt64(value) ?? seed
            case "--emits": emits = Int(value)
            case "--db": postgres = value
            case "--restart-server": restartServer = value
            default: break
            }
            index += 2
        }
    }
}

let options = Options(CommandLine.arguments)
let binary = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("jobq")
    .path
let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
    "jobq-chaos-\(UUID().uuidString.prefix(8))")
try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
let db = options.postgres ?? directory.appendingPathComponent("chaos.sqlite").path
let onPostgres = options.postgres != nil

/// A new log file in the run's directory, open for writing.
func logFile(_ name: String) -> FileHandle {
    let path = directory.appendingPathComponent(name).path
    _ = FileManager.default.createFile(atPath: path, contents: nil)
    return FileHandle(forWritingAtPath: path)!
}

func run(_ arguments: [String], log: String) -> Process {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: binary)
    process.arguments = ["--db", db] + arguments
    let path = directory.appendingPathComponent(log).path
    _ = FileManager.default.createFile(atPath: path, contents: nil)
    let handle = FileHandle(forWritingAtPath: path)!
    handle.seekToEndOfFile()
    process.standardOutput = handle
    process.standardError = handle
    try! process.run()
    return process
}

var random = SystemRandomNumberGenerator()

// The store, and one batch whose callback must fire exactly once.
precondition(run(["migrate", "up"], log: "setup.log").waitUntilExitAndStatus() == 0)
precondition(
    run(["batch", "create", "chaos", "--on-complete", "echo", "--payload", "{}"], log: "setup.log")
        .waitUntilExitAndStatus() == 0)

// Nested workflows: sequences and parallel groups with sleeps, flaky steps that succeed on a
// retry, and (in every other one) a `continue` group holding a step that always dies.
let workflowCount = max(2, options.jobs / 1000)
for index in 0..<workflowCount {
    let tolerant =
        index % 2 == 1
        ? #", {"parallel": [{"executor": "fail", "payload": {"message": "doomed"}, "maxAttempts": 2}, {"executor": "sum", "payload": {"a": 1, "b": 1}, "maxAttempts": 10}], "onFailure": "continue"}"#
        : ""
    let text = """
        {"name": "chaos-\(index)", "sequence": [
          {"executor": "sum", "payload": {"a": \(index), "b": 1}, "maxAttempts": 10},
          {"parallel": [
            {"executor": "sleep", "payload": {"seconds": 0.2}, "maxAttempts": 10},
            {"sequence": [{"executor": "sum", "payload": {"a": 1, "b": 2}, "maxAttempts": 10}, {"executor": "fail", "payload": {"message": "flaky", "succeedFromAttempt": 2}, "maxAttempts": 10}]},
            {"parallel": [{"executor": "sleep", "payload": {"seconds": 0.1}, "maxAttempts": 10}, {"executor": "sum", "payload": {"a": 2, "b": 2}, "maxAttempts": 10}]}
          ]}\(tolerant),
          {"executor": "sum", "payload": {"a": 0, "b": 0}, "maxAttempts": 10}
        ]}
        """
    let path = directory.appendingPathComponent("workflow-\(index).json").path
    try text.write(toFile: path, atomically: true, encoding: .utf8)
    precondition(run(["workflow", "submit", path], log: "setup.log").waitUntilExitAndStatus() == 0)
}

// Job trees: a root fans out to pages, each page to sleeping words and a flaky check (and, in
// every other tree, a doomed job under a `continue` node): children are created by the
// transactions that record their parents, while workers die around them.
let treeCount = max(2, options.jobs / 2000)
let treePages = 4
let treeWords = 5
func treeJobs(_ index: Int) -> Int { 1 + treePages * (1 + treeWords + 1 + (index % 2 == 1 ? 1 : 0)) }
for index in 0..<treeCount {
    let words = Array(repeating: #"{"seconds": 0.05}"#, count: treeWords).joined(separator: ",")
    let doomed = index % 2 == 1 ? #", "doomed": [{"message": "doomed"}]"# : ""
    let page = #"{"words": [\#(words)], "checks": [{"message": "flaky", "succeedFromAttempt": 2}]\#(doomed)}"#
    let doomedNode =
        index % 2 == 1
        ? #", {"executor": "fail", "name": "doomed", "each": "/doomed", "maxAttempts": 2, "onFailure": "continue"}"#
        : ""
    let text = """
        {"name": "tree-\(index)", "tree": {"executor": "echo", "name": "root", "maxAttempts": 10,
          "payload": {"pages": [\(Array(repeating: page, count: treePages).joined(separator: ","))]},
          "children": [{"executor": "echo", "name": "page", "each": "/pages", "maxAttempts": 10, "children": [
            {"executor": "sleep", "name": "word", "each": "/words", "maxAttempts": 10},
            {"executor": "fail", "name": "check", "each": "/checks", "maxAttempts": 10}\(doomedNode)]}]}}
        """
    let path = directory.appendingPathComponent("tree-\(index).json").path
    try text.write(toFile: path, atomically: true, encoding: .utf8)
    precondition(run(["workflow", "submit", path], log: "setup.log").waitUntilExitAndStatus() == 0)
}

// A schedule that every worker's scheduler races for, while workers die: one job per occurrence.
let scheduleTimes = max(20, options.jobs / 200)
precondition(
    run(
        [
            "schedule", "add", "chaos-tick", "echo", "--every", "150ms", "--times", "\(scheduleTimes)", "--missed",
            "catchUp"
        ], log: "setup.log"
    )
    .waitUntilExitAndStatus() == 0)

// Event triggers: two emitters emit the same dedupe keys at once, and enqueue unique jobs of the
// same few keys. Each key's emit makes its tasks once; `second` waits for that emit's `first`;
// `boot` runs once ever; a unique key is never held by two unfinished jobs at once.
let emits = options.emits ?? max(20, options.jobs / 250)
for (task, extra) in [
    ("first", ["sum", "--payload", #"{"a": 1, "b": 1}"#, "--priority", "5", "--max-attempts", "10"]),
    (
        "second",
        [
            "fail", "--payload", #"{"message": "flaky", "succeedFromAttempt": 2}"#, "--depends-on", "first",
            "--max-attempts", "10"
        ]
    ),
    ("boot", ["sleep", "--payload", #"{"seconds": 0.05}"#, "--once", "--max-attempts", "10"])
] {
    precondition(run(["trigger", "add", "chaos.event", task] + extra, log: "setup.log").waitUntilExitAndStatus() == 0)
}
// A queue limited per partition (three, given at enqueue) to 2 jobs at once and 30 starts in
// any second, across every worker: never more, kills or not.
let limitedQueue = "chaos-limited"
let concurrencyLimit = 2
let rateLimit = 30
precondition(
    run(
        [
            "queue", "limit", limitedQueue, "--concurrency", "\(concurrencyLimit)", "--rate", "\(rateLimit)/1s",
            "--partition-by", "job"
        ], log: "setup.log"
    )
    .waitUntilExitAndStatus() == 0)
// A queue whose finished jobs the workers' cleaners delete 3 s after they finish, while
// workers are killed: an audit table, filled by triggers the run installs (not part of jobq),
// records every job and event of it deleted, so the checks can tell a cleaned job from a lost
// one, and a job cleaned too early (unfinished, or before its retention) from a good one.
let cleanedQueue = "chaos-cleaned"
let cleanedAfter = 3.0
precondition(
    run(
        [
            "queue", "retention", cleanedQueue, "--succeeded", "3s", "--dead", "3s", "--cancelled", "3s"
        ], log: "setup.log"
    )
    .waitUntilExitAndStatus() == 0)
try installCleanerAudit()

func installCleanerAudit() throws {
    let statements =
        onPostgres
        ? [
            "CREATE TABLE chaos_cleaned (id bigint, state text, finished_at double precision, deleted_at double precision)",
            "CREATE TABLE chaos_cleaned_events (id bigint)",
            """
            CREATE FUNCTION chaos_cleaned_job() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
                INSERT INTO chaos_cleaned VALUES (OLD.id, OLD.state, OLD.finished_at, extract(epoch FROM clock_timestamp()));
                RETURN OLD; END $$
            """,
            """
            CREATE TRIGGER chaos_cleaned_job AFTER DELETE ON jobq_jobs FOR EACH ROW
            WHEN (OLD.queue = '\(cleanedQueue)') EXECUTE FUNCTION chaos_cleaned_job()
            """,
            """
            CREATE FUNCTION chaos_cleaned_event() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
                INSERT INTO chaos_cleaned_events VALUES (OLD.id); RETURN OLD; END $$
            """,
            """
            CREATE TRIGGER chaos_cleaned_event AFTER DELETE ON jobq_events FOR EACH ROW
            WHEN (OLD.queue = '\(cleanedQueue)') EXECUTE FUNCTION chaos_cleaned_event()
            """
        ]
        : [
            "CREATE TABLE chaos_cleaned (id INTEGER, state TEXT, finished_at REAL, deleted_at REAL)",
            "CREATE TABLE chaos_cleaned_events (id INTEGER)",
            """
            CREATE TRIGGER chaos_cleaned_job AFTER DELETE ON jobq_jobs WHEN old.queue = '\(cleanedQueue)' BEGIN
                INSERT INTO chaos_cleaned VALUES (old.id, old.state, old.finished_at, (julianday('now') - 2440587.5) * 86400.0);
            END
            """,
            """
            CREATE TRIGGER chaos_cleaned_event AFTER DELETE ON jobq_events WHEN old.queue = '\(cleanedQueue)' BEGIN
                INSERT INTO chaos_cleaned_events VALUES (old.id);
            END
            """
        ]
    let writer: any ChaosReader = onPostgres ? try PostgresReader(url: db) : try SQLiteReader(path: db, writable: true)
    for statement in statements { _ = try writer.int(statement) }
}

/// The lock files the command-line producers and the server's restarts take turns by.
let restartGate = directory.appendingPathComponent("restart-gate.lock").path
let commandsRunning = directory.appendingPathComponent("commands-running.lock").path

/// A shell line that runs the `jobq` arguments `command` (its output appended to `output`), or
/// exits the script with 1; while the server restarts, between restarts.
func persistently(_ command: String, output: String) -> String {
    guard options.restartServer != nil else { return "\(binary) --db '\(db)' \(command) >> \(output) || exit 1" }
    return
        "flock -x \(restartGate) true && flock -s \(commandsRunning) \(binary) --db '\(db)' \(command) >> \(output) || exit 1"
}

func emitter(_ number: Int) throws -> Process {
    let script = (0..<emits).map { index in
        persistently("emit chaos.event --dedupe e-\(index)", output: "\(directory.path)/emitted-\(number).txt")
            + "\n"
            + persistently(
                "enqueue sleep --payload '{\"seconds\": 0.05}' --max-attempts 10 --unique chaos-u-\(index % 5)",
                output: "\(directory.path)/unique-\(number).txt")
    }.joined(separator: "\n")
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/bin/sh")
    process.arguments = ["-c", script]
    process.standardError = logFile("emitter-\(number).log")
    try process.run()
    return process
}

// Durable functions, enqueued before the workers start; their signals are sent below.
let functionCount = max(10, options.jobs / 200)
let functionFile = directory.appendingPathComponent("functions.jsonl").path
try ChaosFunctions.jobLines(functionCount).write(toFile: functionFile, atomically: true, encoding: .utf8)
let functionIDs = { () -> [Int64] in
    let process = run(["enqueue", "--file", functionFile, "--any-executor"], log: "functions.txt")
    precondition(process.waitUntilExitAndStatus() == 0)
    let text = (try? String(contentsOfFile: directory.appendingPathComponent("functions.txt").path, encoding: .utf8))
    return (text ?? "").split(separator: "\n").compactMap { Int64($0) }
}()
precondition(functionIDs.count == functionCount, "the functions were not all enqueued")

/// Sends each function its `go` signal (payload n + 1000) once, in a random order at random
/// moments over the first seconds of the run: many arrive before their function reaches its wait.
@MainActor func signaller() throws -> Process {
    var order = Array(functionIDs.enumerated())
    order.shuffle(using: &random)
    let script = order.map { n, id in
        "sleep 0.0\(Int.random(in: 1...9, using: &random)); "
            + persistently("signal \(id) go --payload \(n + 1000)", output: "\(directory.path)/signalled.txt")
    }.joined(separator: "\n")
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/bin/sh")
    process.arguments = ["-c", script]
    process.standardError = logFile("signaller.log")
    try process.run()
    return process
}

func functionWorker(_ number: Int) throws -> Process {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
    process.arguments = ["function-worker", "--db", db, "--locks", "\(restartGate):\(commandsRunning)"]
    let log = directory.appendingPathComponent("function-worker-\(number).log").path
    if !FileManager.default.fileExists(atPath: log) { _ = FileManager.default.createFile(atPath: log, contents: nil) }
    let handle = FileHandle(forWritingAtPath: log)!
    handle.seekToEndOfFile()
    process.standardOutput = handle
    process.standardError = handle
    try process.run()
    return process
}

// Jobs with a deadline to start in a queue no worker serves.
let unservedQueue = "chaos-unserved"

// Producers: each enqueues its share in files of 50 lines; the ids printed are acknowledged.
func jobLine(_ index: Int) -> String {
    switch index % 10 {
    // One in 40 goes to the queue the cleaners empty.
    case 0 where index % 40 == 0:
        return #"{"executor": "sum", "payload": {"a": \#(index), "b": 1}, "queue": "\#(cleanedQueue)"}"#
    case 0, 1, 2, 3: return #"{"executor": "sum", "payload": {"a": \#(index), "b": 1}}"#
    case 4, 5: return #"{"executor": "sleep", "payload": {"seconds": 0.\#(index % 5 + 1)}}"#
    case 6: return #"{"executor": "fail", "payload": {"message": "flaky", "succeedFromAttempt": 2}, "maxAttempts": 3}"#
    case 7: return #"{"executor": "fail", "payload": {"message": "doomed"}, "maxAttempts": 2}"#
    // One in 40 expires in a queue no worker serves: the sweep of any worker ends it unrun; one
    // in 40 may run or expire (half a second to start), never both.
    case 8 where index % 40 == 8:
        return
            #"{"executor": "sum", "payload": {"a": \#(index), "b": 4}, "queue": "\#(unservedQueue)", "expireAfter": "200ms"}"#
    case 8 where index % 40 == 28:
        return #"{"executor": "sum", "payload": {"a": \#(index), "b": 5}, "expireAfter": "500ms"}"#
    // One in 80 is a shell command that runs longer than a lease (so that a killed worker's
    // command is still running when its job runs again) and notes, when it starts, any earlier
    // attempt's command of its job still alive (not a zombie) 50 ms later: one whose worker is
    // gone breaks the promise; one whose worker lives was taken over from a worker too slow to
    // renew its lease (which stops its command once it finds out), and is only counted.
    case 9 where index % 80 == 39:
        let notes = "\(directory.path)/shell-$JOBQ_JOB_ID"
        let script =
            "while read p w; do sleep 0.05; "
            + "if tr '\\\\0' '\\\\n' < /proc/$p/environ 2>/dev/null | grep -qx JOBQ_JOB_ID=$JOBQ_JOB_ID; then "
            + "if grep -qs '^State:[^Z]*$' /proc/$w/status; then echo $JOBQ_JOB_ID $p >> \(directory.path)/shell-takeovers; "
            + "else echo $JOBQ_JOB_ID $p >> \(directory.path)/shell-overlaps; fi; fi; "
            + "done < \(notes).pids; echo $$ $PPID >> \(notes).pids; exec sleep 2"
        return #"{"executor": "shell", "payload": {"script": "\#(script)"}, "maxAttempts": 10}"#
    // One job in 20 goes to a lane that must run them one at a time, in append order.
    case 9 where index % 20 == 9: return #"{"executor": "sum", "payload": {"a": \#(index), "b": 3}, "lane": "chaos"}"#
    // One in 20 goes to the limited queue.
    case 9:
        return
            #"{"executor": "sleep", "payload": {"seconds": 0.02}, "queue": "\#(limitedQueue)", "partition": "c\#(index % 3)"}"#
    default: return #"{"executor": "sum", "payload": {"a": \#(index), "b": 2}, "batch": "chaos"}"#
    }
}
var producers: [Process] = []
for producer in 0..<options.producers {
    let share = (producer..<options.jobs).filter { $0 % options.producers == producer }
    var files: [String] = []
    for (chunk, start) in stride(from: 0, to: share.count, by: 50).enumerated() {
        let lines = share[start..<min(start + 50, share.count)].map(jobLine)
        let path = directory.appendingPathComponent("p\(producer)-\(chunk).jsonl").path
        try lines.joined(separator: "\n").write(toFile: path, atomically: true, encoding: .utf8)
        files.append(path)
    }
    let script = files.map {
        persistently("enqueue --file \($0)", output: "\(directory.path)/acked-\(producer).txt")
    }.joined(separator: "\n")
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/bin/sh")
    process.arguments = ["-c", script]
    // Kept with the store when the run fails: why a producer gave up.
    process.standardError = logFile("producer-\(producer).log")
    try process.run()
    producers.append(process)
}
producers += try (0..<2).map(emitter)
producers.append(try signaller())

// Applications enqueueing in their own transactions: an order row and its job, one in five
// rolled back; the killer also kills them (in a transaction or between two) and starts others.
do {
    let setup = try onPostgres ? PostgresReader(url: db) as any ChaosReader : SQLiteReader(path: db, writable: true)
    _ = try setup.int(AppProducer.createTable(postgres: onPostgres))
    _ = try setup.int(ChaosFunctionRows.createTable(postgres: onPostgres))
}
var appProducerCount = 0
var appKills = 0
func appProducer(_ number: Int) throws -> Process {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
    process.arguments = [
        "app-producer", "--db", db, "--name", "app\(number)", "--locks", "\(restartGate):\(commandsRunning)", "--out",
        directory.appendingPathComponent("app-acked.txt").path
    ]
    let log = directory.appendingPathComponent("app-\(number).log").path
    _ = FileManager.default.createFile(atPath: log, contents: nil)
    process.standardOutput = FileHandle(forWritingAtPath: log)
    process.standardError = FileHandle(forWritingAtPath: log)
    try process.run()
    return process
}
var appProducers = try (0..<2).map { try appProducer($0) }
appProducerCount = 2

// Workers, and the killer.
let workerArguments = [
    "work", "--lease", "1s", "--concurrency", "4", "--backoff", "50ms", "--grace", "2s", "--allow-shell", "--queue",
    "default",
    "--queue", limitedQueue, "--queue", cleanedQueue, "--cleaner-every", "500ms"
]
var workers = (0..<options.workers).map { run(workerArguments, log: "worker-\($0).log") }
var functionWorkers = try (0..<2).map(functionWorker)
var functionWorkerKills = 0
var kills = 0
var serverRestarts = 0
let started = Date()
func ids(in file: String) -> [Int64] {
    let text = (try? String(contentsOfFile: directory.appendingPathComponent(file).path, encoding: .utf8)) ?? ""
    return text.split(separator: "\n").compactMap { Int64($0) }
}
func acknowledged() -> [Int64] {
    (0..<options.producers).flatMap { ids(in: "acked-\($0).txt") }
}
let store: any ChaosReader = onPostgres ? try PostgresReader(url: db) : try SQLiteReader(path: db)
func unfinished() throws -> Int {
    try store.int("SELECT COUNT(*) FROM jobq_jobs WHERE state NOT IN ('succeeded', 'dead', 'cancelled')") ?? 0
}
// A follower of the event feed through jobq's API, from the start to the end: ids follow commit
// order, so resuming after the last id seen must miss none.
let follower = EventFollower(db: db, onPostgres: onPostgres)
var batchClosed = false
// Operators at work beside the kills: the `sleep` executor (plain jobs, the limited queue's, the
// trees' words) paused for about fifteen rounds at a time, and a bulk retry of the doomed jobs that
// died, itself killed mid-way now and then and run again.
let pausedExecutor = "sleep"
var pauseWindows: [(from: Double, to: Double)] = []
var pausedSince: Double?
var pauseRounds = 0
var bulkRetries: [(process: Process, killed: Bool)] = []
@MainActor func bulkRunning() -> Bool { bulkRetries.last.map { $0.process.isRunning } ?? false }
while true {
    Thread.sleep(forTimeInterval: Double(options.killEvery) / 1000 * Double.random(in: 0.5...1.5, using: &random))
    let victim = Int.random(in: 0..<workers.count, using: &random)
    kill(workers[victim].processIdentifier, SIGKILL)
    workers[victim].waitUntilExit()
    kills += 1
    workers[victim] = run(workerArguments, log: "worker-\(victim).log")
    // Every other round, a worker of durable functions dies too, wherever its functions are.
    if kills % 2 == 0 {
        let victim = Int.random(in: 0..<functionWorkers.count, using: &random)
        kill(functionWorkers[victim].processIdentifier, SIGKILL)
        functionWorkers[victim].waitUntilExit()
        functionWorkerKills += 1
        functionWorkers[victim] = try functionWorker(victim)
    }
    // Every fourth round, an application producer dies wherever it is; another takes its place
    // (four at most).
    if kills % 4 == 0, let victim = appProducers.firstIndex(where: \.isRunning), appProducerCount < 6 {
        kill(appProducers[victim].processIdentifier, SIGKILL)
        appProducers[victim].waitUntilExit()
        appKills += 1
        appProducers.append(try appProducer(appProducerCount))
        appProducerCount += 1
    }
    let producing = producers.contains { $0.isRunning } || appProducers.contains { $0.isRunning }
    // The first pause and the first bulk retry early, so that a short run has them too; the
    // first bulk retry is never killed, so that one runs to its end.
    if pausedSince == nil, pauseWindows.isEmpty ? kills >= 2 : producing && kills % 15 == 5 {
        precondition(
            run(["pause", "--executor", pausedExecutor], log: "operator.log").waitUntilExitAndStatus() == 0)
        pausedSince = Date().timeIntervalSince1970
        pauseRounds = 0
        // Probes: jobs of the paused executor made after the pause, which no worker can have
        // claimed ahead before it; none may start before the resume.
        for probe in 0..<3 {
            precondition(
                run(
                    ["enqueue", pausedExecutor, "--payload", #"{"seconds": 0.01}"#, "--max-attempts", "10"],
                    log: "probe-\(pauseWindows.count)-\(probe).txt"
                ).waitUntilExitAndStatus() == 0)
        }
    } else if let since = pausedSince {
        pauseRounds += 1
        if pauseRounds >= 15 {
            // Claims may take its jobs again once this commits: the window ends before it.
            pauseWindows.append((since, Date().timeIntervalSince1970))
            precondition(
                run(["resume", "--executor", pausedExecutor], log: "operator.log").waitUntilExitAndStatus() == 0)
            pausedSince = nil
        }
    }
    if bulkRunning(), bulkRetries.count > 1, Bool.random(using: &random) {
        let last = bulkRetries.count - 1
        kill(bulkRetries[last].process.processIdentifier, SIGKILL)
        bulkRetries[last].process.waitUntilExit()
        bulkRetries[last].killed = true
    } else if !bulkRunning(), bulkRetries.isEmpty ? kills >= 3 : producing && kills % 7 == 3 {
        let process = run(
            ["retry", "--where", #"state:dead /message = "doomed""#], log: "bulk-\(bulkRetries.count).log")
        bulkRetries.append((process, false))
    }
    if let restart = options.restartServer, kills % 15 == 7, !bulkRunning() {
        // Between the command-line producers' commands (see the top of this file). -o: the
        // server the command starts must not inherit (and hold for ever) the locks.
        let status = spawnAndWait(
            ["/bin/sh", "-c", "flock -o -x \(restartGate) flock -o -x \(commandsRunning) sh -c \"$0\"", restart],
            log: directory.appendingPathComponent("restart-\(serverRestarts).log").path)
        precondition(status == 0, "--restart-server failed: see restart-\(serverRestarts).log")
        serverRestarts += 1
        // A worker that was starting as the server went down found none and exited: started again.
        for index in workers.indices where !workers[index].isRunning {
            workers[index] = run(workerArguments, log: "worker-\(index).log")
        }
        for index in functionWorkers.indices where !functionWorkers[index].isRunning {
            functionWorkers[index] = try functionWorker(index)
        }
    }
    if !producing, !batchClosed {
        precondition(run(["batch", "close", "chaos"], log: "setup.log").waitUntilExitAndStatus() == 0)
        batchClosed = true
    }
    let scheduleDone = try store.int("SELECT made FROM jobq_schedules WHERE name = 'chaos-tick'") == scheduleTimes
    let operating = pausedSince != nil || bulkRunning()
    if !producing, !operating, scheduleDone, try unfinished() == 0 { break }
    if Date().timeIntervalSince(started) > 600 {
        print("chaos: gave up after 10 minutes")
        break
    }
}
for worker in workers + functionWorkers { kill(worker.processIdentifier, SIGTERM) }
for worker in workers + functionWorkers { worker.waitUntilExit() }
let producerFailures =
    producers.filter { $0.terminationStatus != 0 }.count
    + appProducers.filter { $0.terminationReason == .exit && $0.terminationStatus != 0 }.count

// The checks.
let acked = acknowledged()
// Ids printed by `emit` and `enqueue --unique` are acknowledged too (a repeated id is the
// existing job or the earlier emit's, printed again).
let emittedAndUnique = Set((0..<2).flatMap { ids(in: "emitted-\($0).txt") + ids(in: "unique-\($0).txt") })
let seenInOrder = follower.finish()
let seenEvents = Set(seenInOrder)
let report = try { () throws -> [String: Int] in
    let db = store
    var figures: [String: Int] = [:]
    let ackedList = "[" + (acked + emittedAndUnique).map(String.init).joined(separator: ",") + "]"
    figures["lost"] =
        try db.int(
            onPostgres
                ? """
                SELECT COUNT(*) FROM json_array_elements_text(CAST($1 AS json)) AS acked(id) LEFT JOIN jobq_jobs ON jobq_jobs.id = CAST(acked.id AS bigint)
                WHERE (jobq_jobs.id IS NULL AND CAST(acked.id AS bigint) NOT IN (SELECT id FROM chaos_cleaned))
                    OR jobq_jobs.state NOT IN ('succeeded', 'dead', 'cancelled')
                """
                : """
                SELECT COUNT(*) FROM json_each(?) LEFT JOIN jobq_jobs ON jobq_jobs.id = json_each.value
                WHERE (jobq_jobs.id IS NULL AND json_each.value NOT IN (SELECT id FROM chaos_cleaned))
                    OR jobq_jobs.state NOT IN ('succeeded', 'dead', 'cancelled')
                """, [ackedList]) ?? -1
    // A job ends once per time it was made to run again (a bulk retry's `retried`), no more.
    figures["duplicates"] =
        try db.int(
            """
            SELECT COUNT(*) FROM (SELECT job_id, SUM(CASE WHEN kind = 'retried' THEN 0 ELSE 1 END) AS ends,
                SUM(CASE WHEN kind = 'retried' THEN 1 ELSE 0 END) AS retries
                FROM jobq_events WHERE kind IN ('succeeded', 'dead', 'retried') GROUP BY job_id) AS t
            WHERE ends > 1 + retries
            """) ?? -1
    figures["retried"] = try db.int("SELECT COUNT(*) FROM jobq_events WHERE kind = 'retried'") ?? -1
    figures["bulkEvents"] = try db.int("SELECT COUNT(*) FROM jobq_events WHERE kind = 'bulk'") ?? -1
    // Probes of the paused executor (made after each pause began) that started before its
    // resume. (Jobs claimed ahead into a worker's buffer before a pause still start: they are
    // not claims.)
    var pausedStarts = 0
    for (index, window) in pauseWindows.enumerated() {
        let probes = (0..<3).flatMap { ids(in: "probe-\(index)-\($0).txt") }
        guard probes.count == 3 else {
            pausedStarts += 1000
            continue
        }
        pausedStarts +=
            try db.int(
                """
                SELECT COUNT(*) FROM jobq_events WHERE kind = 'started'
                    AND job_id IN (\(probes.map(String.init).joined(separator: ", "))) AND created_at < \(window.to)
                """) ?? -1
    }
    figures["pausedStarts"] = pausedStarts
    figures["overAttempts"] = try db.int("SELECT COUNT(*) FROM jobq_jobs WHERE attempt > max_attempts") ?? -1
    // Events the follower never saw or saw twice, and events it saw out of the feed's final
    // order (an event that appeared before one it had passed); on SQLite, whose ids have no
    // holes, also ids missing.
    // (On SQLite a job's `enqueued` event is read from its row, at the job's id.)
    let allEvents = try db.ids(
        onPostgres
            ? "SELECT id FROM jobq_events ORDER BY xact, id"
            : "SELECT id FROM jobq_events UNION ALL SELECT id FROM jobq_jobs WHERE enqueued_data IS NOT NULL ORDER BY id"
    )
    // Events the cleaner deleted count as seen only if the follower saw them before.
    // (On SQLite a cleaned job's `enqueued` event, at its id, went with its row.)
    let cleanedEvents = try db.ids(
        onPostgres
            ? "SELECT id FROM chaos_cleaned_events"
            : "SELECT id FROM chaos_cleaned_events UNION ALL SELECT id FROM chaos_cleaned")
    let kept = Set(allEvents)
    let missed = kept.subtracting(seenEvents).count + Set(cleanedEvents).subtracting(seenEvents).count
    let seenTwice = seenInOrder.count - seenEvents.count
    let outOfOrder = seenInOrder.filter(kept.contains) == allEvents.filter(seenEvents.contains) ? 0 : 1
    let holes = onPostgres ? 0 : (allEvents.last.map(Int.init) ?? 0) - allEvents.count - cleanedEvents.count
    // The cleaned queue: jobs deleted, and of them any deleted unfinished or before their
    // retention (must be none).
    figures["cleanedJobs"] = try db.int("SELECT COUNT(*) FROM chaos_cleaned") ?? -1
    figures["cleanedTooEarly"] =
        try db.int(
            """
            SELECT COUNT(*) FROM chaos_cleaned WHERE state NOT IN ('succeeded', 'dead', 'cancelled')
                OR finished_at IS NULL OR deleted_at < finished_at + \(cleanedAfter) - 0.05
            """) ?? -1
    figures["eventGaps"] = missed + seenTwice + outOfOrder + holes
    figures["redeliveries"] =
        try db.int(
            "SELECT COUNT(*) FROM jobq_events WHERE kind IN ('failed', 'dead') AND CAST(data AS text) LIKE '%lost its lease%'"
        ) ?? -1
    // Jobs claimed ahead into a killed worker's buffer: handed back with their attempts.
    figures["bufferRedeliveries"] =
        try db.int(
            "SELECT COUNT(*) FROM jobq_events WHERE kind = 'released' AND CAST(data AS text) LIKE '%before the attempt started%'"
        ) ?? -1
    // The poison guard: jobs a killed worker held without a start mark, near the head of its
    // buffer (suspects, whose start is then committed before they run), and jobs ended for a
    // worker's death without a `started` event ever written (must be none).
    figures["suspects"] = try db.int("SELECT COUNT(*) FROM jobq_jobs WHERE unstarted_deliveries > 0") ?? -1
    figures["deadNeverStarted"] =
        try db.int(
            """
            SELECT COUNT(*) FROM jobq_jobs j WHERE j.state = 'dead' AND j.error LIKE '%worker%'
                AND NOT EXISTS (SELECT 1 FROM jobq_events e WHERE e.job_id = j.id AND e.kind = 'started')
            """) ?? -1
    // An attempt counted that no `started` event shows (a start is committed before the job runs).
    figures["burned"] =
        try db.int(
            """
            SELECT COALESCE(SUM(CASE WHEN j.attempt > s.n THEN j.attempt - s.n ELSE 0 END), 0)
            FROM jobq_jobs j JOIN (SELECT j2.id, (SELECT COUNT(*) FROM jobq_events e WHERE e.job_id = j2.id AND e.kind = 'started') AS n FROM jobq_jobs j2) AS s
                ON s.id = j.id
            WHERE j.state IN ('succeeded', 'dead', 'cancelled')
            """) ?? -1
    figures["batchFirings"] = try db.int("SELECT COUNT(*) FROM jobq_events WHERE kind = 'batch'") ?? -1
    figures["batchCallbacks"] =
        try db.int(
            "SELECT COUNT(*) FROM jobq_jobs WHERE executor = 'echo' AND workflow_id IS NULL AND schedule IS NULL")
        ?? -1
    figures["jobs"] = try db.int("SELECT COUNT(*) FROM jobq_jobs") ?? -1
    // Deadlines to start: an expired job is cancelled, never succeeded, and started no attempt
    // after it expired (one may have started in time, lost its lease to a kill, and expired
    // before its retry could start: a deadline to start counts for retries too); every job of
    // the unserved queue expired.
    figures["expired"] = try db.int("SELECT COUNT(*) FROM jobq_events WHERE kind = 'expired'") ?? -1
    figures["expiredRan"] =
        try db.int(
            """
            SELECT COUNT(*) FROM jobq_jobs j WHERE EXISTS (SELECT 1 FROM jobq_events e WHERE e.job_id = j.id AND e.kind = 'expired')
                AND (j.state != 'cancelled'
                    OR EXISTS (SELECT 1 FROM jobq_events e WHERE e.job_id = j.id AND (e.kind = 'succeeded'
                        OR (e.kind = 'started' AND e.created_at > (SELECT MIN(x.created_at) FROM jobq_events x
                            WHERE x.job_id = j.id AND x.kind = 'expired'))))
                    OR (j.attempt > 0 AND NOT EXISTS (SELECT 1 FROM jobq_events e WHERE e.job_id = j.id AND e.kind = 'started')))
            """) ?? -1
    figures["unservedNotExpired"] =
        try db.int(
            """
            SELECT COUNT(*) FROM jobq_jobs j WHERE j.queue = '\(unservedQueue)'
                AND (SELECT COUNT(*) FROM jobq_events e WHERE e.job_id = j.id AND e.kind = 'expired') != 1
            """) ?? -1
    // The applications' orders and their jobs: every acknowledged order is there with its job;
    // no job without its order (a rolled-back transaction's), no order without its job, and no
    // order with two.
    let orderOfJob = onPostgres ? "(payload ->> 'order')" : "json_extract(payload, '$.order')"
    let orders = Set(try db.pairs("SELECT note, 1 FROM \(onPostgres ? "public." : "")chaos_app_orders").map(\.name))
    let jobsOfOrders = try db.pairs(
        "SELECT \(orderOfJob), COUNT(*) FROM jobq_jobs WHERE \(orderOfJob) IS NOT NULL GROUP BY \(orderOfJob)")
    let ordered = Set(jobsOfOrders.map(\.name))
    let appAcked =
        ((try? String(contentsOfFile: directory.appendingPathComponent("app-acked.txt").path, encoding: .utf8))
        ?? "").split(separator: "\n").map(String.init)
    figures["appOrders"] = orders.count
    figures["appAcked"] = appAcked.count
    figures["appLost"] = appAcked.filter { !orders.contains($0) || !ordered.contains($0) }.count
    figures["rolledBackJobs"] = ordered.subtracting(orders).count
    figures["ordersWithoutJob"] = orders.subtracting(ordered).count
    figures["appDuplicates"] = jobsOfOrders.filter { $0.count != 1 }.count
    // The server keeps its own files consistent; SQLite's file is checked.
    figures["integrityOK"] = try onPostgres || db.string("PRAGMA integrity_check") == "ok" ? 1 : 0
    figures["workflows"] = try db.int("SELECT COUNT(*) FROM jobq_workflows") ?? -1
    // Final exactly once: a final state, and one `workflow` event each.
    figures["workflowsFinalOnce"] =
        try db.int(
            """
            SELECT COUNT(*) FROM jobq_workflows w WHERE w.state != 'running'
                AND (SELECT COUNT(*) FROM jobq_events e WHERE e.workflow_id = w.id AND e.kind = 'workflow') = 1
            """) ?? -1
    figures["workflowsSucceeded"] = try db.int("SELECT COUNT(*) FROM jobq_workflows WHERE state = 'succeeded'") ?? -1
    // A tree is final once (one `tree` event), succeeded (its doomed jobs are contained), and
    // holds exactly the jobs its data makes: none lost, none created twice.
    let treeOfEvent = onPostgres ? "CAST(e.data ->> 'tree' AS bigint)" : "json_extract(e.data, '$.tree')"
    let stateOfEvent = onPostgres ? "(e.data ->> 'state')" : "json_extract(e.data, '$.state')"
    figures["treesFinalOnce"] =
        try db.int(
            """
            SELECT COUNT(*) FROM jobq_trees t WHERE (SELECT COUNT(*) FROM jobq_events e WHERE e.kind = 'tree' AND \(treeOfEvent) = t.id) = 1
            """) ?? -1
    figures["treesSucceeded"] =
        try db.int("SELECT COUNT(*) FROM jobq_events e WHERE e.kind = 'tree' AND \(stateOfEvent) = 'succeeded'") ?? -1
    let treeJobCounts = try db.pairs(
        """
        SELECT w.name, COUNT(j.id) AS n FROM jobq_trees t JOIN jobq_workflows w ON w.id = t.workflow_id
            JOIN jobq_tree_nodes n ON n.tree_id = t.id JOIN jobq_jobs j ON j.tree_node = n.id GROUP BY t.id, w.name
        """)
    figures["treesWithWrongJobs"] =
        treeJobCounts.filter { row in
            let index = Int(row.name.dropFirst("tree-".count)) ?? -1
            return row.count != treeJobs(index)
        }.count + (treeCount - treeJobCounts.count)
    // The schedule made each occurrence's job once, and counted them.
    figures["scheduleJobs"] =
        try db.int("SELECT COUNT(DISTINCT occurrence) FROM jobq_jobs WHERE schedule = 'chaos-tick'") ?? -1
    figures["scheduleRows"] = try db.int("SELECT COUNT(*) FROM jobq_jobs WHERE schedule = 'chaos-tick'") ?? -1
    figures["waiting"] = try db.int("SELECT COUNT(*) FROM jobq_jobs WHERE state = 'waiting'") ?? -1
    // Triggers: one job per task per dedupe key, `boot` once, and no `second` that started
    // before the `first` of its emit had finished.
    for task in ["first", "second", "boot"] {
        figures["trigger-\(task)"] =
            try db.int("SELECT COUNT(*) FROM jobq_jobs WHERE name = '\("chaos.event/\(task)")'") ?? -1
    }
    figures["triggerOrder"] =
        try db.int(
            """
            SELECT COUNT(*) FROM jobq_jobs s JOIN jobq_dependencies d ON d.job_id = s.id JOIN jobq_jobs f ON f.id = d.depends_on
            WHERE s.name = 'chaos.event/second' AND (s.started_at < f.finished_at OR f.name != 'chaos.event/first')
            """) ?? -1
    figures["triggerUnlinked"] =
        try db.int(
            """
            SELECT COUNT(*) FROM jobq_jobs s WHERE s.name = 'chaos.event/second' AND (SELECT COUNT(*) FROM jobq_dependencies d WHERE d.job_id = s.id) != 1
            """) ?? -1
    // Unique keys: a job stored (its `enqueued` event, in commit order) before the job of its key
    // stored before it had finished (its final event).
    figures["uniqueJobs"] = try db.int("SELECT COUNT(*) FROM jobq_jobs WHERE unique_key IS NOT NULL") ?? -1
    figures["uniqueOverlaps"] =
        try db.int(
            """
            WITH marks AS (
                SELECT j.id, j.unique_key,
                    (SELECT MIN(e.id) FROM jobq_events e WHERE e.job_id = j.id AND e.kind = 'enqueued') AS stored,
                    (SELECT MAX(e.id) FROM jobq_events e WHERE e.job_id = j.id AND e.kind IN ('succeeded', 'dead', 'cancelled')) AS finished
                FROM jobq_jobs j WHERE j.unique_key IS NOT NULL)
            SELECT COUNT(*) FROM marks a JOIN marks b ON b.unique_key = a.unique_key AND b.id > a.id
            WHERE a.finished IS NULL OR b.stored < a.finished
            """) ?? -1
    // Jobs of the limited queue that started while the limit's worth of others of their
    // partition ran (by the recorded times of each job's last attempt; a killed attempt held its
    // place until reclaimed).
    figures["limitedJobs"] = try db.int("SELECT COUNT(*) FROM jobq_jobs WHERE queue = '\(limitedQueue)'") ?? -1
    figures["limitOverlaps"] =
        try db.int(
            """
            SELECT COUNT(*) FROM jobq_jobs a WHERE a.queue = '\(limitedQueue)' AND a.started_at IS NOT NULL
                AND (SELECT COUNT(*) FROM jobq_jobs b WHERE b.queue = '\(limitedQueue)' AND b.partition_key = a.partition_key
                    AND b.started_at <= a.started_at AND b.finished_at > a.started_at) > \(concurrencyLimit)
            """) ?? -1
    // Starts (every attempt's `started` event, killed ones included) after which the second
    // before held more than the rate's worth of its partition's starts.
    figures["rateOverlaps"] =
        try db.int(
            """
            SELECT COUNT(*) FROM jobq_events a JOIN jobq_jobs ja ON ja.id = a.job_id
            WHERE a.kind = 'started' AND ja.queue = '\(limitedQueue)'
                AND (SELECT COUNT(*) FROM jobq_events b JOIN jobq_jobs jb ON jb.id = b.job_id
                    WHERE b.kind = 'started' AND jb.queue = '\(limitedQueue)' AND jb.partition_key = ja.partition_key
                        AND b.created_at > a.created_at - 1 AND b.created_at <= a.created_at) > \(rateLimit)
            """) ?? -1
    figures["shellJobs"] = try db.int("SELECT COUNT(*) FROM jobq_jobs WHERE executor = 'shell'") ?? -1
    let overlaps = (try? String(contentsOfFile: "\(directory.path)/shell-overlaps", encoding: .utf8)) ?? ""
    figures["shellOverlaps"] = overlaps.split(separator: "\n").count
    let takeovers = (try? String(contentsOfFile: "\(directory.path)/shell-takeovers", encoding: .utf8)) ?? ""
    figures["shellTakeovers"] = takeovers.split(separator: "\n").count
    // A lane job that started before the one appended before it had finished.
    figures["laneJobs"] = try db.int("SELECT COUNT(*) FROM jobq_jobs WHERE lane = 'chaos'") ?? -1
    figures["laneOverlaps"] =
        try db.int(
            """
            SELECT COUNT(*) FROM (SELECT started_at, LAG(finished_at) OVER (ORDER BY id) AS previous_end FROM jobq_jobs WHERE lane = 'chaos') AS lane
            WHERE previous_end IS NOT NULL AND started_at < previous_end
            """) ?? -1
    // Durable functions: each succeeded with its result (its event of its own batch), its
    // record holds exactly its seven positions in order, its one signal was taken, by its
    // wait, once.
    let functionList = "(" + functionIDs.map(String.init).joined(separator: ",") + ")"
    figures["functionsNotSucceeded"] =
        try db.int("SELECT COUNT(*) FROM jobq_jobs WHERE id IN \(functionList) AND state != 'succeeded'") ?? -1
    let results = try db.pairs(
        "SELECT COALESCE(CAST(result AS text), ''), id FROM jobq_jobs WHERE id IN \(functionList)")
    figures["functionResultsWrong"] =
        results.filter { row in
            guard let n = functionIDs.firstIndex(of: Int64(row.count)),
                let output = try? JSONDecoder().decode(ChaosFunctions.Order.Output.self, from: Data(row.name.utf8))
            else { return true }
            return output != ChaosFunctions.Order.expected(n)
        }.count + (functionCount - results.count)
    let recordText = ChaosFunctions.record.enumerated().map { "\($0.offset):\($0.element.kind):\($0.element.name)" }
        .joined(separator: "|")
    let records = try db.pairs(
        """
        SELECT \(onPostgres ? "string_agg(position || ':' || kind || ':' || name, '|' ORDER BY position)" : "group_concat(position || ':' || kind || ':' || name, '|')"), job_id
        FROM (SELECT * FROM jobq_steps WHERE job_id IN \(functionList) ORDER BY job_id, position) AS s GROUP BY job_id
        """)
    figures["functionRecordsWrong"] =
        records.filter { $0.name != recordText }.count + (functionCount - records.count)
    figures["functionStepsUnfinished"] =
        try db.int("SELECT COUNT(*) FROM jobq_steps WHERE job_id IN \(functionList) AND finished_at IS NULL") ?? -1
    figures["signalsWrong"] =
        try db.int(
            """
            SELECT COUNT(*) FROM jobq_jobs j WHERE j.id IN \(functionList)
                AND (SELECT COUNT(*) FROM jobq_signals s WHERE s.job_id = j.id AND s.position = 3) != 1
            """) ?? -1
    figures["signalsUntaken"] = try db.int("SELECT COUNT(*) FROM jobq_signals WHERE position IS NULL") ?? -1
    figures["functionsFinishedTwice"] =
        try db.int(
            """
            SELECT COUNT(*) FROM (SELECT job_id FROM jobq_events WHERE job_id IN \(functionList) AND kind = 'succeeded'
                GROUP BY job_id HAVING COUNT(*) > 1) AS twice
            """) ?? -1
    // Each function's two committed steps: one row each, never two, none missing.
    let rowsTable = (onPostgres ? "public." : "") + ChaosFunctionRows.table
    figures["functionRowsWrong"] =
        (try db.int(
            "SELECT COUNT(*) FROM (SELECT n, step FROM \(rowsTable) GROUP BY n, step HAVING COUNT(*) > 1) AS twice")
            ?? -1)
        + 2 * functionCount
        - (try db.int("SELECT COUNT(*) FROM (SELECT DISTINCT n, step FROM \(rowsTable)) AS rows") ?? 0)
    figures["functionParks"] =
        try db.int("SELECT COUNT(*) FROM jobq_events WHERE job_id IN \(functionList) AND kind = 'parked'") ?? -1
    return figures
}()
var busy = 0
for file in try FileManager.default.contentsOfDirectory(atPath: directory.path) where file.hasSuffix(".log") {
    // A restart's one warning per process ("reconnecting with backoff") may quote the failure
    // that told of it; any other failure is one a user saw.
    let text = ((try? String(contentsOfFile: directory.appendingPathComponent(file).path, encoding: .utf8)) ?? "")
        .split(separator: "\n").filter { !$0.contains("reconnecting with backoff") }.joined(separator: "\n")
    busy +=
        text.components(separatedBy: "database is locked").count - 1 + text.components(separatedBy: "SQLITE_BUSY").count
        - 1
        + text.components(separatedBy: "PostgreSQL connection failed").count - 1
}
func figure(_ key: String) -> Int { report[key] ?? -1 }
var broken: [String] = []
if acked.count != options.jobs { broken.append("acknowledged") }
for key in [
    "lost", "duplicates", "overAttempts", "eventGaps", "waiting", "laneOverlaps", "limitOverlaps", "rateOverlaps",
    "shellOverlaps",
    "cleanedTooEarly", "treesWithWrongJobs",
    "triggerOrder",
    "triggerUnlinked", "uniqueOverlaps", "burned", "deadNeverStarted", "appLost", "rolledBackJobs", "ordersWithoutJob",
    "appDuplicates", "expiredRan", "unservedNotExpired", "pausedStarts", "functionsNotSucceeded",
    "functionResultsWrong", "functionRecordsWrong", "functionStepsUnfinished", "signalsWrong", "signalsUntaken",
    "functionsFinishedTwice", "functionRowsWrong"
] where figure(key) != 0 { broken.append(key) }
// Every bulk retry that was not killed ended well and wrote its `bulk` event (one killed after
// its last commit may have written its own too).
let bulkFinished = bulkRetries.filter { !$0.killed }
if bulkFinished.contains(where: { $0.process.terminationStatus != 0 }) || figure("bulkEvents") < bulkFinished.count
    || figure("bulkEvents") > bulkRetries.count
    || pauseWindows.isEmpty
{
    broken.append("operators")
}
if figure("appOrders") < figure("appAcked") || figure("appAcked") == 0 { broken.append("appOrders") }
// Every workflow recovers from the kills: its flaky steps succeed on a retry, its doomed ones are
// contained by `continue` groups.
let allWorkflows = workflowCount + treeCount
if figure("workflows") != allWorkflows || figure("workflowsFinalOnce") != allWorkflows
    || figure("workflowsSucceeded") != allWorkflows
{
    broken.append("workflows")
}
if figure("scheduleJobs") != scheduleTimes || figure("scheduleRows") != scheduleTimes { broken.append("schedule") }
if figure("trigger-first") != emits || figure("trigger-second") != emits || figure("trigger-boot") != 1 {
    broken.append("triggers")
}
if figure("treesFinalOnce") != treeCount || figure("treesSucceeded") != treeCount { broken.append("trees") }
if figure("batchFirings") != 1 || figure("batchCallbacks") != 1 { broken.append("batch") }
if figure("integrityOK") != 1 { broken.append("integrity") }
if busy != 0 { broken.append("busy") }
if producerFailures != 0 { broken.append("producers") }
if options.restartServer != nil, serverRestarts == 0 { broken.append("serverRestarts") }
let ok = broken.isEmpty
let elapsed = String(format: "%.1fs", Date().timeIntervalSince(started))
var line =
    "chaos: jobs \(acked.count)/\(options.jobs) acknowledged, kills \(kills), re-deliveries \(figure("redeliveries")) "
line +=
    "(+ \(figure("bufferRedeliveries")) never started), attempts burned by jobs that never started: \(figure("burned")) "
line +=
    "(poison guard: \(figure("suspects")) suspects started with a mark first, \(figure("deadNeverStarted")) ended dead never started), "
line += "lost \(figure("lost")), duplicates \(figure("duplicates")), over-attempts \(figure("overAttempts")), "
line +=
    "event gaps \(figure("eventGaps")), batch firings \(figure("batchFirings")) (callbacks \(figure("batchCallbacks"))), "
line +=
    "workflows final once \(figure("workflowsFinalOnce"))/\(allWorkflows) (succeeded \(figure("workflowsSucceeded"))), "
line +=
    "trees final once \(figure("treesFinalOnce"))/\(treeCount) (succeeded \(figure("treesSucceeded")), wrong job counts \(figure("treesWithWrongJobs"))), "
line += "schedule jobs \(figure("scheduleRows"))/\(scheduleTimes) (occurrences \(figure("scheduleJobs"))), "
line +=
    "trigger jobs \(figure("trigger-first"))+\(figure("trigger-second"))/\(emits)+\(emits) (once \(figure("trigger-boot")), out of order \(figure("triggerOrder") + figure("triggerUnlinked"))), "
line += "unique jobs \(figure("uniqueJobs")) (overlaps \(figure("uniqueOverlaps"))), "
line += "lane jobs \(figure("laneJobs")) (overlaps \(figure("laneOverlaps"))), "
line +=
    "shell jobs \(figure("shellJobs")) (a killed worker's command beside its job's next attempt \(figure("shellOverlaps")), "
    + "a slow worker's command taken over \(figure("shellTakeovers"))), "
line +=
    "limited jobs \(figure("limitedJobs")) (over the limit \(figure("limitOverlaps")), over the rate \(figure("rateOverlaps"))), cleaned jobs \(figure("cleanedJobs")) (too early \(figure("cleanedTooEarly"))), waiting \(figure("waiting")), "
line +=
    "integrity \(onPostgres ? "n/a (server)" : figure("integrityOK") == 1 ? "ok" : "FAILED"), busy errors \(busy), producer failures \(producerFailures), "
if options.restartServer != nil { line += "server restarts \(serverRestarts), " }
line +=
    "orders enqueued in the app's transaction \(figure("appOrders")) (acknowledged \(figure("appAcked")), producers killed \(appKills), "
    + "lost \(figure("appLost")), rolled-back jobs run \(figure("rolledBackJobs")), orders without their job \(figure("ordersWithoutJob")), "
    + "twice \(figure("appDuplicates"))), "
line +=
    "durable functions \(functionCount) (workers killed \(functionWorkerKills), parks \(figure("functionParks")), "
    + "not succeeded \(figure("functionsNotSucceeded")), wrong results \(figure("functionResultsWrong")), "
    + "wrong records \(figure("functionRecordsWrong")), unfinished steps \(figure("functionStepsUnfinished")), "
    + "signals not taken once \(figure("signalsWrong") + figure("signalsUntaken")), "
    + "finished twice \(figure("functionsFinishedTwice")), committed step rows wrong \(figure("functionRowsWrong"))), "
line +=
    "expired \(figure("expired")) (ran anyway \(figure("expiredRan")), unserved jobs not expired \(figure("unservedNotExpired"))), "
line +=
    "executor paused \(pauseWindows.count) times (its jobs made during a pause that started before the resume \(figure("pausedStarts"))), "
    + "bulk retries \(bulkRetries.count) (killed \(bulkRetries.filter(\.killed).count), jobs retried \(figure("retried")), "
    + "bulk events \(figure("bulkEvents"))), \(elapsed)"
if !ok { line += " -- FAILED (\(broken.joined(separator: ", "))), store kept at \(onPostgres ? "the database" : db)" }
print(line)
if producerFailures != 0 {
    // What the failing producers said, for the test's output.
    for name in (0..<options.producers).map({ "producer-\($0).log" }) + ["emitter-0.log", "emitter-1.log"] {
        let text = (try? String(contentsOfFile: directory.appendingPathComponent(name).path, encoding: .utf8)) ?? ""
        let said = text.split(separator: "\n").suffix(3).joined(separator: " | ")
        if !said.isEmpty { print("\(name): \(said)") }
    }
}
if ok { try? FileManager.default.removeItem(at: directory) }
exit(ok ? 0 : 1)

/// Runs `arguments` (an absolute path first) with standard output and error appended to `log`,
/// and returns its exit status. Not Foundation's `Process`: its `waitUntilExit` also waits for a
/// descriptor the child inherits, which a server the command starts keeps open for good.
func spawnAndWait(_ arguments: [String], log: String) -> Int32 {
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 1, log, O_WRONLY | O_CREAT | O_APPEND, 0o644)
    posix_spawn_file_actions_adddup2(&actions, 1, 2)
    let argv = arguments.map { strdup($0) } + [nil]
    defer { for pointer in argv { free(pointer) } }
    var pid: pid_t = 0
    guard posix_spawn(&pid, arguments[0], &actions, nil, argv, environ) == 0 else { return -1 }
    var status: Int32 = 0
    while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
    return (status & 0x7f) == 0 ? (status >> 8) & 0xff : -1
}

extension Process {
    func waitUntilExitAndStatus() -> Int32 {
        waitUntilExit()
        return terminationStatus
    }
}
