import ArgumentParser
import Foundation
import JobQ
import JobQCommandLine

/// What `jobq pause` and `jobq resume` act on: a queue, an executor in every queue, or all.
struct PauseSelection: ParsableArguments {
    @Argument(help: "The queue's name.") var queue: String?

    @Option(help: ArgumentHelp("Jobs of this executor, in every queue, instead of a queue.", valueName: "name"))
    var executor: String?

    @Flag(help: "Every job of the store.")
    var all = false

    enum Target {
        case queue(String)
        case executor(String)
        case all
    }

    /// Exactly one of a queue, --executor and --all.
    func target(verb: String) throws -> Target {
        switch (queue, executor, all) {
        case (let queue?, nil, false): return .queue(queue)
        case (nil, let executor?, false): return .executor(executor)
        case (nil, nil, true): return .all
        case (nil, nil, false): throw CLIError.usage("give a queue, --executor NAME or --all to \(verb)")
        default: throw CLIError.usage("give one of a queue, --executor NAME and --all, not several")
        }
    }
}

struct PauseCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pause",
        abstract: "Stop workers from claiming a queue's jobs, an executor's jobs in every queue, or every job.",
        discussion: """
            Every worker on every machine obeys from its next claim, and hands back the jobs it \
            claimed ahead and has not started within about half a second. Running jobs finish; \
            enqueueing still works. `jobq status` shows what is paused and since when.
              jobq pause mail-queue
              jobq pause --executor mail      # stop sending emails now, whatever the queue
              jobq pause --all                # e.g. during maintenance
            """)

    @OptionGroup var store: StoreOptions
    @OptionGroup var selection: PauseSelection

    func run() async throws {
        let target = try selection.target(verb: "pause")
        let queue = try await store.open()
        switch target {
        case .queue(let name):
            try await queue.pause(queue: name)
            print("queue \(name) paused")
        case .executor(let name):
            try await queue.pause(executor: name)
            print("executor \(name) paused in every queue")
        case .all:
            try await queue.pauseAll()
            print("every job paused (`jobq resume --all` ends it)")
        }
    }
}

struct ResumeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "resume",
        abstract: "End a pause: of a queue, of an executor, or of every job (--all).",
        discussion: """
            `--all` ends only the store-wide pause: queues and executors paused on their own stay \
            paused.
            """)

    @OptionGroup var store: StoreOptions
    @OptionGroup var selection: PauseSelection

    func run() async throws {
        let target = try selection.target(verb: "resume")
        let queue = try await store.open()
        switch target {
        case .queue(let name):
            try await queue.resume(queue: name)
            print("queue \(name) resumed")
        case .executor(let name):
            try await queue.resume(executor: name)
            print("executor \(name) resumed")
        case .all:
            try await queue.resumeAll()
            print("the store-wide pause is over")
        }
    }
}
