import ArgumentParser
import Foundation
import JobQ
import JobQCommandLine

struct EnqueueCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "enqueue",
        abstract: "Add a job (or every job in a JSON Lines file) to the store.",
        discussion: helpText(
            """
            Examples:
              jobq enqueue sum --param a=1 --param b=2
              jobq enqueue sleep --payload '{"seconds": 0.5}' --delay 30s --priority 5
              jobq enqueue shell --timeout 1m -- convert in.png out.jpg
              jobq enqueue --file jobs.jsonl

            --param key=value builds a JSON object; a value that parses as JSON (1, true,
            [1,2]) is used as such, anything else as a string.

            A --file has one JSON object per line: {"executor": "sum", "payload": {"a": 1, "b": 2},
            "queue": "default", "priority": 0, "maxAttempts": 3, "delay": "30s" or "runAt": ISO 8601,
            "timeout": "1m", "after": [12, {"id": 13, "policy": "ignore"}], "lane": "imports",
            "unique": "KEY" or {"key": "KEY", "for": "1h", "states": ["succeeded"]}, "partition": "acme"}. All lines are
            enqueued in one transaction, or none.

            --after ID waits until job ID succeeded (the job is `waiting` until then); if it dies
            or is cancelled, --on-dependency-failure decides: cancel (default), fail, ignore
            (counts as met) or run (at once). --lane NAME runs the lane's jobs one at a time in
            append order, whichever worker claims them.

            --unique KEY: while a job with KEY is unfinished, enqueueing prints that job's id
            (and says so on stderr, exit 0) instead of adding one; two processes racing add one.
            --unique-for 1h keeps the key for an hour after the job finishes, whatever its outcome;
            --unique-states succeeded keeps it only after a success (for ever without
            --unique-for). `jobq retry` of a finished job whose key a newer job holds is refused.

            --partition VALUE puts the job in that partition of its queue's limits (see
            `jobq queue limit --partition-by`): e.g. one partition per customer.
            """)
    )

    @OptionGroup var store: StoreOptions

    @Argument(help: "The executor to run the job: shell, sleep, sum, echo, fail, or your own with --any-executor.")
    var executor: String?

    @Option(help: "The queue to put the job on.")
    var queue: String = JobOptions.defaultQueue

    @Option(help: ArgumentHelp("The job's input as JSON.", valueName: "json"))
    var payload: String?

    @Option(
        name: .customLong("param"),
        help: ArgumentHelp("A payload field, key=value. Repeatable.", valueName: "key=value"))
    var params: [String] = []

    @Option(help: "Higher runs first within a queue.")
    var priority: Int = 0

    @Option(help: ArgumentHelp("Run after this long, e.g. 30s, 5m, 2h.", valueName: "duration"))
    var delay: String?

    @Option(help: ArgumentHelp("Run at this time (ISO 8601, e.g. 2026-12-01T09:00:00Z).", valueName: "time"))
    var at: String?

    @Option(
        help: ArgumentHelp(
            "Give the job up (cancelled, with an expired event) if no attempt has started this long after its run time, e.g. 10m.",
            valueName: "duration"))
    var expireAfter: String?

    @Option(help: "Attempts before the job is dead.")
    var maxAttempts: Int = JobOptions.defaultMaxAttempts

    @Option(help: ArgumentHelp("Cancel an attempt that runs longer than this, e.g. 30s.", valueName: "duration"))
    var timeout: String?

    @Option(help: ArgumentHelp("A name for the job, which tracking sets can follow as job:NAME.", valueName: "name"))
    var name: String?

    @Option(help: ArgumentHelp("Add the job to this open batch (see `jobq batch`).", valueName: "name"))
    var batch: String?

    @Option(
        name: .customLong("after"),
        help: ArgumentHelp(
            "Wait until this job succeeded; ID:POLICY sets what its failure does (cancel, fail, ignore, run). Repeatable.",
            valueName: "id[:policy]"))
    var after: [String] = []

    @Option(
        help: ArgumentHelp(
            "What a dependency that dies or is cancelled does: cancel (default), fail, ignore, run.",
            valueName: "policy"))
    var onDependencyFailure: String?

    @Option(
        help: ArgumentHelp(
            "Append the job to this lane: its jobs run one at a time, in append order.", valueName: "name"))
    var lane: String?

    @Option(help: ArgumentHelp("Set the lane's failure policy: continue (default) or halt.", valueName: "policy"))
    var laneOnFailure: String?

    @Option(
        help: ArgumentHelp(
            "Make the job unique by this key: while a job with the key holds it, print that job's id instead of adding one.",
            valueName: "key"))
    var unique: String?

    @Option(
        help: ArgumentHelp(
            "Keep the key this long after the job finishes (default: until it finishes).", valueName: "duration"))
    var uniqueFor: String?

    @Option(
        help: ArgumentHelp(
            "States that hold the key, comma-separated; unfinished ones always do. Add succeeded, dead or cancelled to keep it after finishing.",
            valueName: "states"))
    var uniqueStates: String?

    @Option(
        help: ArgumentHelp(
            "With --unique: what to do to a holder of the key that has not started: keep it (default) or replace its payload and priority.",
            valueName: "rule"))
    var uniqueConflict: String?

    @Option(
        help: ArgumentHelp(
            "With --unique: debounce a holder of the key that has not started: take this payload and run this long after the last enqueue.",
            valueName: "duration"))
    var debounce: String?

    @Option(
        help: ArgumentHelp(
            "With --debounce: never put the job off past this long after it was first enqueued (default: 10 times the quiet period).",
            valueName: "duration"))
    var debounceMax: String?

    @Option(
        help: ArgumentHelp(
            "The partition the job counts against when its queue's limits are split by partition.", valueName: "value"))
    var partition: String?

    @Option(help: ArgumentHelp("Enqueue every job in this JSON Lines file, in one transaction.", valueName: "path"))
    var file: String?

    @Flag(help: "Print each new job as one JSON object per line instead of its id.")
    var json = false

    @Flag(help: "Accept an executor name that is not built in (for jobs run by your own WorkerPool).")
    var anyExecutor = false

    @OptionGroup var result: ResultWaitOptions

    @Argument(parsing: .postTerminator, help: "For shell: the command and its arguments, after --.")
    var command: [String] = []

    func run() async throws {
        let limit = try result.limit()
        let wait = result.wait
        let requests = try makeRequests()
        guard !wait || requests.count == 1 else {
            throw CLIError.usage(
                "--wait waits for one job; for a file of jobs, enqueue them and then `jobq wait ID...`")
        }
        let queue = try await store.open()
        let outcomes = try await queue.enqueueReportingDuplicates(contentsOf: requests)
        for outcome in outcomes {
            let job = outcome.job
            if !wait { print(json ? job.jsonLine : String(job.id)) }
            if outcome.existed {
                printError(Self.duplicateNote(job, rule: requests.first { $0.options.unique?.key == job.uniqueKey }))
            }
        }
        if wait, let job = outcomes.first?.job {
            try await result.printResult(within: limit) { try await queue.resultJSON(of: job.id, timeout: $0) }
        }
    }

    /// What an enqueue of a key that `job` holds did, as its conflict rule says.
    static func duplicateNote(_ job: Job, rule request: JobRequest?) -> String {
        let holds = "job \(job.id) (\(job.state.rawValue)) already holds unique key '\(job.uniqueKey ?? "")'"
        let changeable: Set<JobState> = [.waiting, .scheduled, .ready]
        switch request?.options.unique?.onConflict {
        case .replace? where changeable.contains(job.state):
            return holds + "; its payload and priority were replaced, and nothing new was enqueued"
        case .debounce? where changeable.contains(job.state):
            return holds + "; it was put off to \(job.runAt.ISO8601Format()), and nothing new was enqueued"
        default:
            return holds + "; nothing was enqueued"
        }
    }

    func makeRequests() throws -> [JobRequest] {
        if let file {
            guard executor == nil, payload == nil, params.isEmpty, command.isEmpty, name == nil, batch == nil,
                after.isEmpty,
                onDependencyFailure == nil, lane == nil, laneOnFailure == nil, unique == nil, uniqueFor == nil,
                uniqueStates == nil, uniqueConflict == nil, debounce == nil, debounceMax == nil, partition == nil
            else {
                throw CLIError.usage(
                    "--file takes its executors, payloads, names, batches, dependencies, lanes, unique keys and partitions from the "
                        + "file; drop the executor name, --payload, --param, --name, --batch, --after, --on-dependency-failure, "
                        + "--lane, --lane-on-failure, --unique, --unique-for, --unique-states, --unique-conflict, --debounce, "
                        + "--debounce-max, --partition and the command"
                )
            }
            return try JobLinesFile.read(path: file, allowUnknownExecutors: anyExecutor)
        }
        guard let executor else {
            throw CLIError.usage(
                "name an executor (e.g. `jobq enqueue sum --param a=1 --param b=2`) or pass --file jobs.jsonl")
        }
        try checkExecutorName(executor, allowUnknown: anyExecutor)
        let payloadJSON = try makePayload(executor: executor)
        let options = try makeOptions()
        do {
            return [try JobRequest(executor: executor, payloadJSON: payloadJSON, options: options)]
        } catch {
            throw CLIError.usage(error.description)
        }
    }

    private func makePayload(executor: String) throws -> String {
        let given = [payload != nil, !params.isEmpty, !command.isEmpty].filter { $0 }.count
        guard given <= 1 else {
            throw CLIError.usage(
                "give the payload one way: --payload JSON, --param key=value, or (for shell) a command after --")
        }
        if !command.isEmpty {
            guard executor == ShellExecutor.name else {
                throw CLIError.usage("a command after -- is only for the shell executor, not '\(executor)'")
            }
            return try jsonText(["argv": command])
        }
        if let payload {
            do {
                _ = try JobRequest(executor: executor, payloadJSON: payload)
            } catch {
                throw CLIError.usage("--payload: \(error.description)")
            }
            return payload
        }
        var object: [String: Any] = [:]
        for param in params {
            guard let equals = param.firstIndex(of: "="), equals != param.startIndex else {
                throw CLIError.usage("--param '\(param)': expected key=value, e.g. --param a=1")
            }
            let key = String(param[..<equals])
            let value = String(param[param.index(after: equals)...])
            guard object[key] == nil else { throw CLIError.usage("--param: key '\(key)' is given twice") }
            object[key] =
                (try? JSONSerialization.jsonObject(with: Data(value.utf8), options: [.fragmentsAllowed])) ?? value
        }
        return try jsonText(object)
    }

    private func makeOptions() throws -> JobOptions {
        guard delay == nil || at == nil else {
            throw CLIError.usage("give --delay or --at, not both")
        }
        var runAt: Date?
        if let delay {
            runAt = Date().addingTimeInterval(try parseDuration(delay, option: "--delay").inSeconds)
        }
        if let at {
            guard let date = parseISO8601(at) else {
                throw CLIError.usage("--at: '\(at)' is not an ISO 8601 time; use e.g. 2026-12-01T09:00:00Z")
            }
            runAt = date
        }
        guard maxAttempts >= 1, maxAttempts <= 1000 else {
            throw CLIError.usage("--max-attempts must be from 1 to 1000, got \(maxAttempts)")
        }
        var options = JobOptions(
            queue: queue, priority: priority, runAt: runAt, maxAttempts: maxAttempts, name: name, batch: batch)
        do {
            if let onDependencyFailure {
                options.onDependencyFailure = try DependencyPolicy(parsing: onDependencyFailure)
            }
            for item in after {
                let parts = item.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
                guard let id = JobID(parts[0]), id > 0 else {
                    throw CLIError.usage(
                        "--after '\(item)': expected a job id, optionally with a policy, e.g. --after 12 or --after 12:ignore"
                    )
                }
                options.after.append(id)
                if parts.count == 2 { options.dependencyPolicies[id] = try DependencyPolicy(parsing: String(parts[1])) }
            }
            options.lane = lane
            if let laneOnFailure {
                guard lane != nil else { throw CLIError.usage("--lane-on-failure needs --lane NAME") }
                options.laneOnFailure = try LaneFailurePolicy(parsing: laneOnFailure)
            }
        } catch let error as JobQueueError {
            throw CLIError.usage(error.description)
        }
        options.unique = try makeUniqueKey()
        options.partition = partition
        if let timeout {
            let duration = try parseDuration(timeout, option: "--timeout")
            guard duration > .zero else { throw CLIError.usage("--timeout must be longer than 0") }
            options.timeout = duration
        }
        if let expireAfter {
            let window = try parseDuration(expireAfter, option: "--expire-after")
            guard window > .zero else {
                throw CLIError.usage("--expire-after must be longer than 0, e.g. 10m")
            }
            options.expiresAt = (runAt ?? Date()).addingTimeInterval(window.inSeconds)
        }
        return options
    }
}

extension EnqueueCommand {
    private func makeUniqueKey() throws -> UniqueKey? {
        guard let unique else {
            guard uniqueFor == nil, uniqueStates == nil, uniqueConflict == nil, debounce == nil, debounceMax == nil
            else {
                throw CLIError.usage(
                    "--unique-for, --unique-states, --unique-conflict, --debounce and --debounce-max need --unique KEY")
            }
            return nil
        }
        let period = try uniqueFor.map { try parseDuration($0, option: "--unique-for") }
        do {
            let key: UniqueKey
            if let uniqueStates {
                var states: Set<JobState> = []
                for text in uniqueStates.split(separator: ",", omittingEmptySubsequences: false) {
                    do { states.insert(try JobState(parsing: text.trimmingCharacters(in: .whitespaces))) } catch {
                        throw CLIError.usage("--unique-states: \(error.description)")
                    }
                }
                key = try UniqueKey(unique, for: period, states: states)
            } else {
                key = UniqueKey(unique, for: period)
            }
            return try withConflictRule(key)
        } catch let error as JobQueueError {
            throw CLIError.usage(error.description)
        }
    }
}

extension EnqueueCommand {
    /// The key with the rule of `--unique-conflict` or `--debounce`.
    func withConflictRule(_ key: UniqueKey) throws -> UniqueKey {
        var key = key
        if let debounce {
            guard uniqueConflict == nil || uniqueConflict == "debounce" else {
                throw CLIError.usage(
                    "--debounce is a conflict rule of its own; drop --unique-conflict \(uniqueConflict ?? "")")
            }
            let quiet = try parseDuration(debounce, option: "--debounce")
            let longest = try debounceMax.map { try parseDuration($0, option: "--debounce-max") } ?? quiet * 10
            key.onConflict = .debounce(quiet: quiet, longest: longest)
            return key
        }
        guard debounceMax == nil else { throw CLIError.usage("--debounce-max goes with --debounce") }
        switch uniqueConflict {
        case nil, "keep": key.onConflict = .keep
        case "replace": key.onConflict = .replace
        case let other?:
            throw CLIError.usage(
                "--unique-conflict \(other): give keep or replace (or --debounce DURATION to debounce)")
        }
        return key
    }
}

/// Refuses executor names that no `jobq work` can run, unless the user says their own pool will.
func checkExecutorName(_ name: String, allowUnknown: Bool) throws {
    guard !allowUnknown, !BuiltinExecutors.names.contains(name) else { return }
    throw CLIError.usage(
        "unknown executor '\(name)'; built-in executors are: \(BuiltinExecutors.names.joined(separator: ", ")). "
            + "If your own WorkerPool registers '\(name)', pass --any-executor")
}

func jsonText(_ object: Any) throws -> String {
    let data = try JSONSerialization.data(
        withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes, .fragmentsAllowed])
    return String(decoding: data, as: UTF8.self)
}

func parseISO8601(_ text: String) -> Date? {
    if let date = try? Date(text, strategy: .iso8601) { return date }
    return try? Date(text, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true))
}
