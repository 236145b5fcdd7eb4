import Foundation
import JobQ

/// Modes in which the helper is one of several processes racing on one store; each prints a
/// summary line to stdout and appends progress to --log.
enum Race {
    /// `enqueue-unique --db PATH --keys K --count N`: N enqueues, one per transaction, of keys
    /// `key-0` ... `key-(K-1)` in turn. Prints `new X existed Y`.
    static func enqueueUnique(db: String) async throws {
        let keys = Int(argument("--keys") ?? "10") ?? 10
        let count = Int(argument("--count") ?? "1000") ?? 1000
        let queue = try JobQueue(path: db)
        var new = 0
        var existed = 0
        for index in 0..<count {
            let request = try JobRequest(
                executor: "echo", payloadJSON: #"{"n":\#(index)}"#,
                options: .init(unique: UniqueKey("key-\(index % keys)")))
            let outcome = try await queue.enqueueReportingDuplicates(contentsOf: [request])[0]
            if outcome.existed { existed += 1 } else { new += 1 }
        }
        print("new \(new) existed \(existed)")
    }

    /// `emit --db PATH --event E --count N`: N emits of E with dedupe keys `d-0` ... `d-(N-1)`.
    /// Prints `made X deduplicated Y`.
    static func emit(db: String) async throws {
        let event = argument("--event") ?? "app.launched"
        let count = Int(argument("--count") ?? "50") ?? 50
        let queue = try JobQueue(path: db)
        var made = 0
        var deduplicated = 0
        for index in 0..<count {
            let emitted = try await queue.emit(event, payloadJSON: #"{"n":\#(index)}"#, dedupe: "d-\(index)")
            if emitted.deduplicated { deduplicated += 1 } else { made += emitted.jobs.count }
        }
        print("made \(made) deduplicated \(deduplicated)")
    }

    /// `crash-worker --db PATH`: a pool whose `crash` executor kills its own process with
    /// SIGKILL the moment it runs (a poison job); short leases, until every job is final.
    static func crashWorker(db: String) async throws {
        struct Crash: Executor {
            static let name = "crash"
            func run(_ input: JSONValue, context: JobContext) async throws -> JSONValue {
                log("crash attempt \(context.attempt)")
                kill(getpid(), SIGKILL)
                return .null
            }
        }
        let queue = try JobQueue(path: db)
        var options = WorkerPool.Options()
        options.lease = .milliseconds(300)
        options.pollInterval = .milliseconds(20)
        options.stopWhen = .allJobsFinished
        try await WorkerPool(queue: queue, executors: [Crash()], options: options).run()
        print("finished")
    }

    /// `schedule-race --db PATH --from ISO8601 --seconds S --step D`: the scheduler's step at
    /// every simulated D seconds from --from for S seconds, logging `tick T` after each.
    static func scheduleRace(db: String) async throws {
        guard let from = argument("--from").flatMap({ try? Date($0, strategy: .iso8601) }) else {
            FileHandle.standardError.write(Data("schedule-race needs --from ISO8601\n".utf8))
            exit(2)
        }
        let seconds = Double(argument("--seconds") ?? "3600") ?? 3600
        let step = Double(argument("--step") ?? "1") ?? 1
        let queue = try JobQueue(path: db)
        var made = 0
        var t = 0.0
        while t <= seconds {
            made += try await queue.runDueSchedules(now: from.addingTimeInterval(t)).count
            log("tick \(Int(t))")
            t += step
        }
        print("made \(made)")
    }
}
