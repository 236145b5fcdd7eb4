import ArgumentParser
import Foundation
import JobQ
import JobQCommandLine

struct CancelCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cancel",
        abstract: "Cancel a job that has not finished, or every such job a filter matches. A running job's worker "
            + "stops it within a lease renewal.",
        discussion: """
              jobq cancel 42
              jobq cancel --where 'executor:mail state:ready,scheduled' --dry-run
            """)

    @OptionGroup var store: StoreOptions
    @Argument(help: "The job's id.") var id: Int64?
    @OptionGroup var selection: BulkSelection

    func run() async throws {
        switch try selection.target(id, verb: "cancel") {
        case .one(let id):
            let job = try await store.open().cancel(id)
            if job.state == .cancelled {
                print("job \(job.id) cancelled")
            } else {
                print("job \(job.id) is a durable function: it runs once more to compensate, then ends cancelled")
            }
        case .many(let filter):
            try await BulkSelection.run(.cancel, filter, dryRun: selection.dryRun, on: try await store.open())
        }
    }
}

struct RetryCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "retry",
        abstract: "Run a failed, dead or cancelled job again now (a dead job gets one more attempt), or every such "
            + "job a filter matches.",
        discussion: """
              jobq retry 42
              jobq retry --where 'state:dead /customer = "acme" finished<24h' --dry-run
            """)

    @OptionGroup var store: StoreOptions
    @Argument(help: "The job's id.") var id: Int64?
    @OptionGroup var selection: BulkSelection

    func run() async throws {
        switch try selection.target(id, verb: "retry") {
        case .one(let id):
            let job = try await store.open().retry(id)
            print("job \(job.id) is ready (attempt \(job.attempt + 1) of \(job.maxAttempts) next)")
        case .many(let filter):
            try await BulkSelection.run(.retry, filter, dryRun: selection.dryRun, on: try await store.open())
        }
    }
}

struct PruneCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "prune",
        abstract: "Delete finished jobs (succeeded, dead, cancelled) that finished longer ago than --older-than.")

    @OptionGroup var store: StoreOptions

    @Option(help: ArgumentHelp("Age, e.g. 7d, 12h.", valueName: "duration"))
    var olderThan: String

    @Option(
        name: .customLong("state"),
        help: "Only this final state (succeeded, dead, cancelled). Repeatable. Default: all three.")
    var states: [String] = []

    func run() async throws {
        let age = try parseDuration(olderThan, option: "--older-than")
        var selected: Set<JobState> = [.succeeded, .dead, .cancelled]
        if !states.isEmpty {
            selected = try Set(
                states.map { text in
                    let state = try parseState(text, option: "--state")
                    guard state.isFinal else {
                        throw CLIError.usage(
                            "--state: only final states can be pruned (succeeded, dead, cancelled), not '\(text)'")
                    }
                    return state
                })
        }
        let removed = try await store.open().prune(olderThan: age, states: selected)
        print("pruned \(removed) job(s)")
    }
}
