import ArgumentParser
import Foundation
import JobQ
import JobQCommandLine

struct BatchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "batch",
        abstract: "Group jobs into a batch that fires callbacks once when all of them finished.",
        discussion: helpText(
            """
            jobq batch create import --on-complete echo --payload '{"notify": "ops"}'
            jobq enqueue sum --param a=1 --param b=2 --batch import
            jobq batch close import
            jobq batch show import
            """),
        subcommands: [BatchCreateCommand.self, BatchCloseCommand.self, BatchShowCommand.self])
}

struct BatchCreateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "create", abstract: "Create an open batch.")

    @OptionGroup var store: StoreOptions
    @Argument(help: "The batch's name.") var name: String

    @Option(help: ArgumentHelp("Executor of the job enqueued when every member finished.", valueName: "executor"))
    var onComplete: String?

    @Option(help: ArgumentHelp("Its payload, a JSON object; the summary is added under \"batch\".", valueName: "json"))
    var payload: String = "{}"

    @Option(help: ArgumentHelp("Executor of the job enqueued when every member succeeded.", valueName: "executor"))
    var onSuccess: String?

    @Option(help: ArgumentHelp("Its payload, a JSON object.", valueName: "json"))
    var successPayload: String = "{}"

    @Option(help: "The queue the callbacks go to.")
    var queue: String = JobOptions.defaultQueue

    @Flag(help: "Accept a callback executor that is not built in.")
    var anyExecutor = false

    func run() async throws {
        func callback(_ executor: String?, _ payload: String, option: String) throws -> JobRequest? {
            guard let executor else { return nil }
            try checkExecutorName(executor, allowUnknown: anyExecutor)
            do {
                return try JobRequest(executor: executor, payloadJSON: payload, options: JobOptions(queue: queue))
            } catch {
                throw CLIError.usage("\(option): \(error.description)")
            }
        }
        let complete = try callback(onComplete, payload, option: "--payload")
        let success = try callback(onSuccess, successPayload, option: "--success-payload")
        let batch = try await store.open().createBatch(name, onComplete: complete, onSuccess: success)
        print(
            "batch \(batch.name) created; add jobs with `jobq enqueue ... --batch \(batch.name)`, then `jobq batch close \(batch.name)`"
        )
    }
}

struct BatchCloseCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "close",
        abstract: "Seal a batch: it fires once every member has finished (at once if it has none).")

    @OptionGroup var store: StoreOptions
    @Argument(help: "The batch's name.") var name: String

    func run() async throws {
        let batch = try await store.open().closeBatch(name)
        print(
            batch.state == .fired
                ? "batch \(name) closed and fired" : "batch \(name) closed; \(batch.pending) job(s) pending")
    }
}

struct BatchShowCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show", abstract: "Show a batch's counters and callbacks.")

    @OptionGroup var store: StoreOptions
    @Argument(help: "The batch's name.") var name: String
    @Flag(help: "Print one JSON object.") var json = false

    func run() async throws {
        guard let batch = try await store.open().batch(name) else {
            throw CLIError(message: "no batch named '\(name)'", exitCode: .notFound)
        }
        if json {
            print(try encodeJSON(batch))
            return
        }
        print(
            Table.render([
                ["name", batch.name], ["state", batch.state.rawValue], ["total", String(batch.total)],
                ["succeeded", String(batch.succeeded)], ["dead", String(batch.dead)],
                ["cancelled", String(batch.cancelled)],
                ["pending", String(batch.pending)], ["completeJob", batch.completeJobID.map(String.init) ?? "-"],
                ["successJob", batch.successJobID.map(String.init) ?? "-"]
            ]))
    }
}

struct TrackCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "track",
        abstract: "Tracking sets: fire a `tracking` event each time every member has a new result.",
        subcommands: [TrackAddCommand.self, TrackListCommand.self, TrackRemoveCommand.self])
}

struct TrackAddCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "add", abstract: "Create a tracking set.")

    @OptionGroup var store: StoreOptions
    @Argument(help: "The set's name.") var name: String

    @Option(
        name: .customLong("member"),
        help: "An executor name, or job:NAME for jobs enqueued with --name NAME. Repeatable.")
    var members: [String] = []

    func run() async throws {
        guard !members.isEmpty else { throw CLIError.usage("give at least one --member (an executor, or job:NAME)") }
        var parsed: [TrackingMember] = []
        for text in members {
            do { parsed.append(try TrackingMember(parsing: text)) } catch {
                throw CLIError.usage("--member: \(error.description)")
            }
        }
        let set = try await store.open().addTrackingSet(name, members: parsed)
        print("tracking set \(set.name): \(set.members.joined(separator: ", "))")
    }
}

struct TrackListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "List tracking sets.")

    @OptionGroup var store: StoreOptions
    @Flag(help: "Print JSON Lines: one set per line.") var json = false

    func run() async throws {
        let sets = try await store.open().trackingSets()
        if json {
            for set in sets { print(try encodeJSON(set)) }
            return
        }
        var rows = [["NAME", "ROUND", "MEMBERS", "FRESH"]]
        for set in sets {
            rows.append([
                set.name, String(set.round), set.members.joined(separator: ","), set.fresh.joined(separator: ",")
            ])
        }
        print(Table.render(rows))
    }
}

struct TrackRemoveCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "remove", abstract: "Remove a tracking set.")

    @OptionGroup var store: StoreOptions
    @Argument(help: "The set's name.") var name: String

    func run() async throws {
        try await store.open().removeTrackingSet(name)
        print("tracking set \(name) removed")
    }
}
