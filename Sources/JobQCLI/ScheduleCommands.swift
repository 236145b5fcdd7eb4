import ArgumentParser
import Foundation
import JobQ
import JobQCommandLine

struct ScheduleCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "schedule",
        abstract: "Jobs made at a time, every interval, or on a cron expression; `jobq work` runs the scheduler.",
        discussion: helpText(
            """
            jobq schedule add report shell --payload '{"script": "make report"}' --cron '0 3 * * MON-FRI' --tz Europe/Paris
            jobq schedule add ping echo --every 90s --times 10
            jobq schedule add launch echo --at 2026-12-01T09:00:00Z
            jobq schedule list
            jobq schedule show report
            """),
        subcommands: [
            ScheduleAddCommand.self, ScheduleListCommand.self, ScheduleShowCommand.self, SchedulePauseCommand.self,
            ScheduleResumeCommand.self, ScheduleRemoveCommand.self
        ])
}

struct ScheduleAddCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add", abstract: "Add a schedule, or replace the one with the same name.",
        discussion:
            "Give one timing: --at TIME, --every DURATION [--times N] [--start TIME], or --cron EXPR [--tz ZONE].")

    @OptionGroup var store: StoreOptions
    @Argument(help: "The schedule's name (letters, digits, - _ . : / @).") var name: String
    @Argument(help: "The executor of its jobs.") var executor: String
    @Option(help: ArgumentHelp("The jobs' payload, JSON.", valueName: "json")) var payload: String = "{}"
    @Option(help: ArgumentHelp("Once, at this ISO 8601 time.", valueName: "time")) var at: String?
    @Option(help: ArgumentHelp("Every interval (e.g. 90s, 1h30m, 250ms).", valueName: "duration")) var every: String?
    @Option(help: "With --every: this many jobs, then stop (default: forever).") var times: Int?
    @Option(
        help: ArgumentHelp("With --every: the first occurrence (default: one interval from now).", valueName: "time"))
    var start: String?
    @Option(
        help: ArgumentHelp(
            "A five-field cron expression, or @hourly, @daily, @weekly, @monthly, @yearly.", valueName: "expr"))
    var cron: String?
    @Option(help: ArgumentHelp("With --cron: the IANA time zone it reads in.", valueName: "zone")) var tz: String =
        "UTC"
    @Option(help: "The jobs' queue.") var queue: String = JobOptions.defaultQueue
    @Option(help: "The jobs' priority.") var priority: Int = 0
    @Option(help: "The jobs' attempts.") var maxAttempts: Int = JobOptions.defaultMaxAttempts
    @Option(help: ArgumentHelp("How long one attempt may run.", valueName: "duration")) var timeout: String?
    @Option(help: "Occurrences missed while no scheduler ran: skip (one job now) or catchUp (one per occurrence).")
    var missed: String = Schedule.MissedPolicy.skip.rawValue
    @Option(help: "With --missed catchUp: at most this many of the latest missed occurrences.")
    var catchUpLimit: Int = Schedule.defaultCatchUpLimit
    @Flag(help: "Accept an executor that is not built in.") var anyExecutor = false

    func run() async throws {
        try checkExecutorName(executor, allowUnknown: anyExecutor)
        let given = [at != nil, every != nil, cron != nil].filter { $0 }.count
        guard given == 1 else { throw CLIError.usage("give one timing: --at TIME, --every DURATION or --cron EXPR") }
        if every == nil, times != nil || start != nil { throw CLIError.usage("--times and --start go with --every") }
        if cron == nil, tz != "UTC" { throw CLIError.usage("--tz goes with --cron") }
        func time(_ text: String, _ option: String) throws -> Date {
            guard let date = parseISO8601(text) else {
                throw CLIError.usage("\(option): '\(text)' is not an ISO 8601 time; use e.g. 2026-12-01T09:00:00Z")
            }
            return date
        }
        let timing: Schedule.Timing
        if let at {
            timing = .at(try time(at, "--at"))
        } else if let every {
            timing = .every(
                try parseDuration(every, option: "--every"), times: times,
                start: try start.map { try time($0, "--start") })
        } else {
            guard let zone = TimeZone(identifier: tz) else {
                throw CLIError.usage(
                    "--tz: unknown time zone '\(tz)'; use an IANA name like Europe/Paris or America/New_York")
            }
            do {
                timing = .cron(try CronExpression(cron ?? ""), timeZone: zone)
            } catch {
                throw CLIError.usage("--cron: \(error.description)")
            }
        }
        guard let policy = Schedule.MissedPolicy(rawValue: missed) else {
            throw CLIError.usage("--missed must be skip or catchUp, got '\(missed)'")
        }
        var options = JobOptions(queue: queue, priority: priority, maxAttempts: maxAttempts)
        if let timeout { options.timeout = try parseDuration(timeout, option: "--timeout") }
        let request: JobRequest
        do {
            request = try JobRequest(executor: executor, payloadJSON: payload, options: options)
        } catch {
            throw CLIError.usage("--payload: \(error.description)")
        }
        let status = try await store.open().addSchedule(
            Schedule(name: name, request: request, timing: timing, missed: policy, catchUpLimit: catchUpLimit))
        print("schedule \(status.name): \(status.timingDescription), next \(status.nextRunAt.map(isoString) ?? "none")")
    }
}

struct ScheduleListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list", abstract: "List schedules with their next run.")

    @OptionGroup var store: StoreOptions
    @Flag(help: "Print JSON Lines: one schedule per line.") var json = false

    func run() async throws {
        let schedules = try await store.open().schedules()
        if json {
            for schedule in schedules { print(schedule.jsonLine) }
            return
        }
        guard !schedules.isEmpty else {
            print("no schedules; add one with `jobq schedule add NAME EXECUTOR --every 1h`")
            return
        }
        var rows = [["NAME", "EXECUTOR", "TIMING", "NEXT", "MADE", "STATE"]]
        for schedule in schedules {
            rows.append([
                schedule.name, schedule.executor, schedule.timingDescription, schedule.nextRunAt.map(isoString) ?? "-",
                String(schedule.made),
                schedule.paused ? "paused" : (schedule.nextRunAt == nil ? "done" : "active")
            ])
        }
        print(Table.render(rows))
    }
}

struct ScheduleShowCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show", abstract: "Show a schedule, its last runs with their outcomes, and its next 5 occurrences."
    )

    @OptionGroup var store: StoreOptions
    @Argument(help: "The schedule's name.") var name: String
    @Flag(help: "Print one JSON object.") var json = false

    func run() async throws {
        let queue = try await store.open()
        guard let schedule = try await queue.schedule(name) else {
            throw CLIError(
                message: "no schedule named '\(name)'; list schedules with `jobq schedule list`", exitCode: .notFound)
        }
        let runs = try await queue.scheduleRuns(name, limit: 10)
        if json {
            // The schedule's object, with its next occurrences and last runs (jobs as in `jobq show --json`).
            let next = schedule.upcoming(5).map { "\"\(isoString($0))\"" }.joined(separator: ",")
            print(
                String(schedule.jsonLine.dropLast()) + ",\"next\":[\(next)],\"lastRuns\":["
                    + runs.map(\.jsonLine).joined(separator: ",") + "]}")
            return
        }
        print(
            "schedule \(schedule.name): \(schedule.executor) \(schedule.payloadJSON) on queue \(schedule.queue), \(schedule.timingDescription)"
        )
        print(
            "state: \(schedule.paused ? "paused" : (schedule.nextRunAt == nil ? "done" : "active")), \(schedule.made) job(s) made, missed: \(schedule.missed.rawValue)"
        )
        let upcoming = schedule.upcoming(5)
        print(upcoming.isEmpty ? "next: none" : "next: " + upcoming.map(isoString).joined(separator: ", "))
        if runs.isEmpty {
            print("no runs yet")
        } else {
            print("last runs:")
            for job in runs {
                var line = "  job \(job.id)  occurrence \(job.occurrence.map(isoString) ?? "-")  \(job.state.rawValue)"
                if let error = job.error { line += "  error: \(error)" }
                print(line)
            }
        }
    }
}

struct SchedulePauseCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "pause", abstract: "Stop a schedule from making jobs.")
    @OptionGroup var store: StoreOptions
    @Argument(help: "The schedule's name.") var name: String

    func run() async throws {
        try await store.open().pauseSchedule(name)
        print("schedule \(name) paused")
    }
}

struct ScheduleResumeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "resume",
        abstract: "Let a paused schedule go on from now (what it missed while paused is not made).")
    @OptionGroup var store: StoreOptions
    @Argument(help: "The schedule's name.") var name: String

    func run() async throws {
        let status = try await store.open().resumeSchedule(name)
        print("schedule \(name) resumed; next \(status.nextRunAt.map(isoString) ?? "none")")
    }
}

struct ScheduleRemoveCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "remove", abstract: "Remove a schedule; the jobs it made stay.")
    @OptionGroup var store: StoreOptions
    @Argument(help: "The schedule's name.") var name: String

    func run() async throws {
        try await store.open().removeSchedule(name)
        print("schedule \(name) removed")
    }
}
