import ArgumentParser
import Foundation
import JobQ
import JobQCommandLine

struct TriggerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "trigger",
        abstract: "Tasks that an emitted event enqueues (`jobq emit EVENT`), by priority and dependencies.",
        discussion: helpText(
            """
            jobq trigger add app.launched migrate shell --payload '{"script": "./migrate"}' --priority 10 --once
            jobq trigger add app.launched warm-cache echo --depends-on migrate
            jobq emit app.launched --payload '{"version": "2.1"}'
            jobq trigger list
            """),
        subcommands: [
            TriggerAddCommand.self, TriggerListCommand.self, TriggerPauseCommand.self, TriggerResumeCommand.self,
            TriggerRemoveCommand.self
        ])
}

struct TriggerAddCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add", abstract: "Add a task for an event, or replace the event's task of that name.",
        discussion: helpText(
            """
            The task's payload must be a JSON object; each emit sets the emitted payload in it under "event".
            --depends-on names tasks of the same event that must exist already; a cycle is refused.
            --once runs the task at the first emit after it is added, and never again.
            """))

    @OptionGroup var store: StoreOptions
    @Argument(help: "The event's name (letters, digits, - _ . : / @).") var event: String
    @Argument(help: "The task's name, unique within the event.") var task: String
    @Argument(help: "The executor of its jobs.") var executor: String
    @Option(help: ArgumentHelp("The job's payload, a JSON object.", valueName: "json")) var payload: String = "{}"
    @Option(help: "Higher runs first: the jobs of one emit are claimed in priority order.") var priority: Int = 0
    @Option(
        name: .customLong("depends-on"),
        help: ArgumentHelp("A task of the same event to wait for. Repeatable.", valueName: "task"))
    var dependsOn: [String] = []
    @Flag(help: "Run only at the first emit of the event after this task is added.") var once = false
    @Option(help: "The jobs' queue.") var queue: String = JobOptions.defaultQueue
    @Option(help: "The jobs' attempts.") var maxAttempts: Int = JobOptions.defaultMaxAttempts
    @Option(help: ArgumentHelp("How long one attempt may run.", valueName: "duration")) var timeout: String?
    @Flag(help: "Accept an executor that is not built in.") var anyExecutor = false

    func run() async throws {
        try checkExecutorName(executor, allowUnknown: anyExecutor)
        var options = JobOptions(queue: queue, priority: priority, maxAttempts: maxAttempts)
        if let timeout { options.timeout = try parseDuration(timeout, option: "--timeout") }
        let request: JobRequest
        do {
            request = try JobRequest(executor: executor, payloadJSON: payload, options: options)
        } catch {
            throw CLIError.usage("--payload: \(error.description)")
        }
        let status = try await store.open().addTrigger(
            Trigger(event: event, task: task, request: request, dependsOn: dependsOn, once: once))
        var line =
            "trigger \(status.event)/\(status.task): \(status.executor) on queue \(status.queue), priority \(status.priority)"
        if !status.dependsOn.isEmpty { line += ", after \(status.dependsOn.joined(separator: ", "))" }
        if status.once { line += status.ranOnceAt == nil ? ", once" : ", once (already ran)" }
        print(line)
    }
}

struct TriggerListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "List triggers by event and task.")

    @OptionGroup var store: StoreOptions
    @Option(help: "Only this event's tasks.") var event: String?
    @Flag(help: "Print JSON Lines: one trigger per line.") var json = false

    func run() async throws {
        let triggers = try await store.open().triggers(event: event)
        if json {
            for trigger in triggers { print(trigger.jsonLine) }
            return
        }
        guard !triggers.isEmpty else {
            print("no triggers; add one with `jobq trigger add EVENT TASK EXECUTOR`")
            return
        }
        var rows = [["EVENT", "TASK", "EXECUTOR", "QUEUE", "PRIORITY", "DEPENDS ON", "STATE"]]
        for trigger in triggers {
            let state =
                trigger.paused
                ? "paused" : trigger.once ? (trigger.ranOnceAt.map { "ran once \(isoString($0))" } ?? "once") : "active"
            rows.append([
                trigger.event, trigger.task, trigger.executor, trigger.queue, String(trigger.priority),
                trigger.dependsOn.isEmpty ? "-" : trigger.dependsOn.joined(separator: ","), state
            ])
        }
        print(Table.render(rows))
    }
}

struct TriggerPauseCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pause",
        abstract: "Stop a task from running when its event is emitted (tasks that depend on it go without it).")
    @OptionGroup var store: StoreOptions
    @Argument(help: "The event's name.") var event: String
    @Argument(help: "The task's name.") var task: String

    func run() async throws {
        try await store.open().pauseTrigger(event: event, task: task)
        print("trigger \(event)/\(task) paused")
    }
}

struct TriggerResumeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "resume", abstract: "Let a paused task run at the next emit of its event.")
    @OptionGroup var store: StoreOptions
    @Argument(help: "The event's name.") var event: String
    @Argument(help: "The task's name.") var task: String

    func run() async throws {
        try await store.open().resumeTrigger(event: event, task: task)
        print("trigger \(event)/\(task) resumed")
    }
}

struct TriggerRemoveCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "remove", abstract: "Remove a task; the jobs it made stay.")
    @OptionGroup var store: StoreOptions
    @Argument(help: "The event's name.") var event: String
    @Argument(help: "The task's name.") var task: String

    func run() async throws {
        try await store.open().removeTrigger(event: event, task: task)
        print("trigger \(event)/\(task) removed")
    }
}

struct EmitCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "emit",
        abstract: "Emit an event: enqueue every active task registered for it, in one transaction; print their ids.",
        discussion: helpText(
            """
            jobq emit app.launched
            jobq emit order.paid --payload '{"order": 1042}' --dedupe order-1042

            Ids are printed in the order the jobs were stored (a task after those it depends on,
            higher priority first). Durable functions waiting for the event (context.waitForEvent)
            whose filter the payload matches take it and resume; stderr names them. With --dedupe KEY, a second emit of the event with KEY within
            24 hours enqueues nothing and prints the first emit's ids (and says so on stderr).
            """))

    @OptionGroup var store: StoreOptions
    @Argument(help: "The event's name.") var event: String
    @Option(help: ArgumentHelp("The event's payload, JSON; each job gets it under \"event\".", valueName: "json"))
    var payload: String = "{}"
    @Option(
        help: ArgumentHelp("Enqueue nothing if an emit of this event had this key within 24 hours.", valueName: "key"))
    var dedupe: String?
    @Flag(help: "Print each job as one JSON object per line instead of its id.") var json = false

    func run() async throws {
        let emitted = try await store.open().emit(event, payloadJSON: payload, dedupe: dedupe)
        for job in emitted.jobs { print(json ? job.jsonLine : String(job.id)) }
        if emitted.deduplicated {
            printError(
                "event '\(event)' was already emitted with dedupe key '\(dedupe ?? "")' within 24 hours; nothing was enqueued"
            )
        } else if emitted.jobs.isEmpty, emitted.resumedFunctions.isEmpty {
            printError(
                "event '\(event)' has no active tasks and no function waits for it; nothing was enqueued "
                    + "(`jobq trigger list` shows the triggers)")
        }
        if !emitted.resumedFunctions.isEmpty {
            printError(
                "resumed \(emitted.resumedFunctions.count) durable function(s) waiting for '\(event)': "
                    + emitted.resumedFunctions.map(String.init).joined(separator: ", "))
        }
    }
}
