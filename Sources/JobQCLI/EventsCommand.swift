import ArgumentParser
import Foundation
import JobQ
import JobQCommandLine

struct EventsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "events",
        abstract: "Print the event feed: every job's lifecycle, batches and tracking sets.",
        discussion: helpText(
            """
            Without --follow, prints the events after --since (default: from the start) and exits.
            With --follow, keeps printing new events as they are committed, by any process.
            Each event's id is its cursor: resume with --since ID, with no gap and no duplicate.
            If events after ID were deleted since (retention, `jobq prune`), it exits 4 saying so.
            On a store filled by `jobq copy` that renumbered events, a cursor among them gets a
            note on stderr: one saved on the source store must be translated.
            Kinds: \(EventKind.allCases.map(\.rawValue).joined(separator: ", ")).
            """))

    @OptionGroup var store: StoreOptions

    @Flag(help: "Keep printing new events until interrupted.")
    var follow = false

    @Option(help: ArgumentHelp("Only events after this event id.", valueName: "cursor"))
    var since: Int64 = 0

    @Option(name: .customLong("job"), help: "Only this job's events. Repeatable.")
    var jobs: [Int64] = []

    @Option(help: "Only events of jobs of this executor.")
    var executor: String?

    @Option(help: "Only events of jobs on this queue.")
    var queue: String?

    @Option(help: "Only events of this batch's jobs.")
    var batch: String?

    @Option(help: "Only events of this workflow: its steps', its groups' and its own.")
    var workflow: Int64?

    @Option(name: .customLong("kind"), help: "Only events of this kind. Repeatable.")
    var kinds: [String] = []

    @Flag(help: "Print JSON Lines: one event object per line.")
    var json = false

    func run() async throws {
        guard since >= 0 else { throw CLIError.usage("--since must not be negative, got \(since)") }
        var kindSet: Set<EventKind> = []
        for text in kinds {
            do { kindSet.insert(try EventKind(parsing: text)) } catch {
                throw CLIError.usage("--kind: \(error.description)")
            }
        }
        let filter = EventFilter(
            jobIDs: Set(jobs), executor: executor, queue: queue, batch: batch, workflow: workflow, kinds: kindSet)
        let jobQueue = try await store.open()
        if since > 0, let record = try await jobQueue.copyRecord(), let through = record.renumberedThrough,
            since <= through
        {
            TerminalOutput.shared.writeLine(
                "note: this store was filled by `jobq copy` (\(isoString(record.finishedAt))), which renumbered event "
                    + "ids up to \(through) to keep the feed's order. A cursor saved on the store copied from means "
                    + "another event here: translate it with the map `jobq copy --event-map FILE` wrote (a follower "
                    + "that had read the whole source resumes with --since \(through))")
        }
        if follow {
            for try await event in jobQueue.events(filter, since: since) { emit(event) }
            return
        }
        var cursor = since
        while true {
            let page = try await jobQueue.events(after: cursor, filter: filter, limit: 1000)
            page.forEach(emit)
            guard page.count == 1000, let last = page.last else { break }
            cursor = last.id
        }
    }

    func emit(_ event: JobEvent) {
        if json {
            print(event.jsonLine)
        } else {
            var parts = [String(event.id), isoString(event.createdAt), event.kind.rawValue]
            if let job = event.jobID { parts.append("job=\(job)") }
            if let executor = event.executor { parts.append("executor=\(executor)") }
            if let batch = event.batch { parts.append("batch=\(batch)") }
            if let workflow = event.workflowID { parts.append("workflow=\(workflow)") }
            if let data = event.dataJSON { parts.append(data) }
            print(parts.joined(separator: "  "))
        }
        // Followers read line by line through pipes: do not let lines sit in a buffer.
        fflush(nil)
    }
}
