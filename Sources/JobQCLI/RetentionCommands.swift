import ArgumentParser
import Foundation
import JobQ
import JobQCommandLine

/// A retention period as typed: a duration (`7d`, `12h`) or `forever`.
/// How long finished jobs are kept, by state: the options `jobq queue retention` and
/// `jobq retention` share.
struct JobRetentionOptions: ParsableArguments {
    @Option(help: ArgumentHelp("Keep succeeded jobs this long (e.g. 7d), or forever.", valueName: "period"))
    var succeeded: String?
    @Option(help: ArgumentHelp("Keep dead jobs this long, or forever.", valueName: "period")) var dead: String?
    @Option(help: ArgumentHelp("Keep cancelled jobs this long, or forever.", valueName: "period"))
    var cancelled: String?

    var isEmpty: Bool { succeeded == nil && dead == nil && cancelled == nil }

    /// The states given on the command line.
    var states: Set<JobState> {
        var states: Set<JobState> = []
        if succeeded != nil { states.insert(.succeeded) }
        if dead != nil { states.insert(.dead) }
        if cancelled != nil { states.insert(.cancelled) }
        return states
    }

    /// Sets what was given on `retention`, leaving the rest.
    func apply(to retention: inout QueueRetention) throws {
        if let succeeded { retention.succeeded = try parseKeep(succeeded, option: "--succeeded") }
        if let dead { retention.dead = try parseKeep(dead, option: "--dead") }
        if let cancelled { retention.cancelled = try parseKeep(cancelled, option: "--cancelled") }
    }
}

func parseKeep(_ text: String, option: String) throws -> Duration? {
    if text == "forever" { return nil }
    let period = try parseDuration(text, option: option)
    guard period > .zero else {
        throw CLIError.usage("\(option) \(text): give a positive period such as 7d, or forever")
    }
    return period
}

struct QueueRetentionCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "retention",
        abstract: "Set how long a queue keeps its finished jobs, by state.",
        discussion: helpText(
            """
            `jobq work` runs a cleaner about once a minute (one per store at a time) that deletes
            finished jobs older than this, with their events, never one that something
            unfinished still refers to (a running workflow or tree, a lane, a batch yet to fire,
            a tracking set, a waiting dependent, a unique key it holds). Options left out keep
            their setting; --default puts the queue back on the store's default (`jobq retention`).

              jobq queue retention thumbnails --succeeded 1d
              jobq queue retention audit --succeeded forever --dead forever --cancelled forever
              jobq queue retention thumbnails --default
            """))

    @OptionGroup var store: StoreOptions
    @Argument(help: "The queue's name.") var queue: String
    @OptionGroup var jobs: JobRetentionOptions
    @Flag(name: .customLong("default"), help: "Use the store's default retention for this queue.") var useDefault =
        false

    func run() async throws {
        guard useDefault == jobs.isEmpty else {
            throw CLIError.usage(
                useDefault
                    ? "give --default alone: it replaces the queue's own retention with the store's"
                    : "give --succeeded, --dead or --cancelled (a period such as 7d, or forever), or --default; "
                        + "`jobq retention` shows the store's default")
        }
        let jobQueue = try await store.open()
        if useDefault {
            try await jobQueue.setRetention(nil, for: queue)
            print("queue \(queue): the store's retention (\(try await jobQueue.retention(for: queue).summary))")
            return
        }
        // Only what was given: the rest keeps the queue's setting or follows the store's default.
        var retention = try await jobQueue.retention(for: queue)
        try jobs.apply(to: &retention)
        try await jobQueue.setRetention(retention, for: queue, states: jobs.states)
        print("queue \(queue): keeps \(try await jobQueue.retention(for: queue).summary)")
    }
}

struct RetentionCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "retention",
        abstract: "Show or set the store's retention: finished jobs of queues without their own, and events.",
        discussion: helpText(
            """
            Defaults: succeeded and cancelled jobs 7 days, dead jobs 30, events 30. The cleaner
            `jobq work` runs deletes what is older (`jobq work --no-cleaner` runs none). A
            follower (`jobq events --since N`) whose cursor is before deleted events is told so
            (exit 4) rather than skipping them.

              jobq retention
              jobq retention --succeeded 3d --events 14d
              jobq retention --events forever
            """))

    @OptionGroup var store: StoreOptions
    @OptionGroup var jobs: JobRetentionOptions
    @Option(help: ArgumentHelp("Keep events this long, or forever.", valueName: "period")) var events: String?
    @Flag(help: "Print one JSON object.") var json = false

    /// `jobq retention --json`.
    struct Shown: Encodable {
        var store: StoreRetention
        var queues: [String: QueueRetention]
    }

    func run() async throws {
        let jobQueue = try await store.open()
        var settings = try await jobQueue.retentionSettings()
        if !jobs.isEmpty || events != nil {
            try jobs.apply(to: &settings.store.jobs)
            if let events { settings.store.events = try parseKeep(events, option: "--events") }
            try await jobQueue.setDefaultRetention(settings.store)
        }
        if json {
            print(try encodeJSON(Shown(store: settings.store, queues: settings.queues)))
            return
        }
        var rows = [
            ["default", settings.store.jobs.summary],
            ["events", settings.store.events.map(DurationParser.format) ?? "forever"]
        ]
        for (queue, retention) in settings.queues.sorted(by: { $0.key < $1.key }) {
            rows.append(["queue \(queue)", retention.summary])
        }
        print(Table.render(rows))
    }
}
