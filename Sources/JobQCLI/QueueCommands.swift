import ArgumentParser
import Foundation
import JobQ
import JobQCommandLine

struct QueueCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "queue",
        abstract: "Show a queue, or set its limits across every worker and machine.",
        subcommands: [QueueShowCommand.self, QueueLimitCommand.self])
}

struct QueueLimitCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "limit",
        abstract: "Set how many of a queue's jobs may run at once, across every worker and machine.",
        discussion: helpText(
            """
            A job claimed ahead into a worker's buffer counts as running. A worker killed while it
            holds limited jobs holds their places until their leases expire and they are reclaimed.
            Lowering a limit stops nothing that runs: claims wait until fewer run.

              jobq queue limit payments-api --concurrency 5
              jobq queue limit payments-api --concurrency none
            """))

    @OptionGroup var store: StoreOptions
    @Argument(help: "The queue's name.") var queue: String
    @Option(help: "At most this many of the queue's jobs at once (1 or more), or none for no limit.")
    var concurrency: String

    func run() async throws {
        let limit: Int?
        if concurrency == "none" {
            limit = nil
        } else if let number = Int(concurrency), number >= 1 {
            limit = number
        } else {
            throw CLIError.usage(
                "--concurrency \(concurrency) is not a number of 1 or more, nor none; e.g. --concurrency 5, or --concurrency none to remove the limit"
            )
        }
        try await store.open().setLimits(QueueLimits(concurrency: limit), for: queue)
        print(limit.map { "queue \(queue): at most \($0) job(s) at once" } ?? "queue \(queue): no concurrency limit")
    }
}

struct QueueShowCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show",
        abstract: "Show a queue: paused or not, its limits, its jobs by state.")

    @OptionGroup var store: StoreOptions
    @Argument(help: "The queue's name.") var queue: String
    @Flag(help: "Print one JSON object.") var json = false

    func run() async throws {
        let status = try await store.open().status()
        guard let entry = status.queues.first(where: { $0.name == queue }) else {
            throw CLIError(
                message:
                    "no queue \(queue) in \(store.location.description): it has no jobs and no settings; `jobq status` lists the queues",
                exitCode: .notFound)
        }
        if json {
            print(try encodeJSON(entry))
            return
        }
        let running = entry.counts["running"] ?? 0
        let ready = entry.counts["ready"] ?? 0
        var limit = "none"
        if let concurrency = entry.concurrencyLimit {
            let waiting = running >= concurrency ? ready : 0
            limit = "\(concurrency) at once (\(running) running, \(waiting) ready job(s) waiting for a place)"
        }
        var rows = [["queue", entry.name], ["paused", entry.paused ? "yes" : "no"], ["concurrency limit", limit]]
        for state in JobState.allCases { rows.append([state.rawValue, String(entry.counts[state.rawValue] ?? 0)]) }
        print(Table.render(rows))
    }
}
