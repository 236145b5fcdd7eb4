import ArgumentParser
import Foundation
import JobQ
import JobQCommandLine

struct ListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "List jobs in id order, or count them, filtered by their fields and payload.",
        discussion: """
            --where takes the filter language of the Swift API's JobFilter: terms that must all hold, e.g.
              jobq list --where 'state:dead executor:mail /customer = "acme" finished<24h'
              jobq list --where 'error~timeout attempt>1' --count
            Fields: state, queue, executor, name, partition, lane, batch, unique, error (with \
            ':' for one of a list, '~' for contains); id, attempt, priority, workflow (':', '=', \
            '<', '<=', '>', '>='); created, run, started, finished, expires ('<' or '>' with an \
            age such as 24h, or a time such as 2026-11-01). Payload members by JSON pointer, \
            compared as JSON: /amount > 100, /vip = true, /note = null, /coupon exists, \
            /customer != "acme". A '-' before a term negates it.
            """)

    @OptionGroup var store: StoreOptions

    @Option(help: "Only jobs on this queue.")
    var queue: String?

    @Option(help: "Only jobs in this state: scheduled, ready, running, succeeded, failed, dead, cancelled.")
    var state: String?

    @Option(
        name: .customLong("where"),
        // Taken whole even when it starts with '-' (a negated first term).
        parsing: .unconditional,
        help: ArgumentHelp("Only jobs this filter matches (see below).", valueName: "filter"))
    var filter: String?

    @Option(help: "At most this many jobs.")
    var limit: Int = 100

    @Flag(help: "Print how many jobs match instead of listing them.")
    var count = false

    @Option(help: "Only jobs with an id greater than this (to page through).")
    var after: Int64?

    @Flag(help: "Print JSON Lines: one job object per line.")
    var json = false

    func run() async throws {
        let state = try self.state.map { try parseState($0, option: "--state") }
        guard limit >= 0 else { throw CLIError.usage("--limit must not be negative, got \(limit)") }
        // The whole filter is read before the store is opened: a typo costs nothing.
        var query = JobQuery(queue: self.queue, state: state)
        if let filter { query.filter = try JobFilter(filter) }
        let filter = query.combinedFilter
        let queue = try await store.open()
        if count {
            print(try await queue.count(where: filter))
            return
        }
        // Pages of at most 1,000, so that a long listing never holds every job at once.
        var remaining = limit
        var after = self.after
        var rows = [["ID", "STATE", "QUEUE", "EXECUTOR", "ATTEMPT", "PRIORITY", "RUN AT", "ERROR"]]
        while remaining > 0 {
            let jobs = try await queue.jobs(where: filter, limit: min(remaining, 1000), after: after)
            if json {
                for job in jobs { print(job.jsonLine) }
            } else {
                rows += jobs.map(Self.row)
            }
            remaining -= jobs.count
            guard jobs.count == 1000, let last = jobs.last else { break }
            after = last.id
        }
        if !json { print(Table.render(rows)) }
    }

    private static func row(_ job: Job) -> [String] {
        let error: String = job.error.map { String($0.prefix(60)) } ?? ""
        let attempt = "\(job.attempt)/\(job.maxAttempts)"
        let row: [String] = [String(job.id), job.state.rawValue, job.queue, job.executor]
        return row + [attempt, String(job.priority), isoString(job.runAt), error]
    }
}

struct ShowCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show",
        abstract: "Show one job.")

    @OptionGroup var store: StoreOptions

    @Argument(help: "The job's id.")
    var id: Int64

    @Flag(help: "Print the job as one JSON object.")
    var json = false

    func run() async throws {
        let queue = try await store.open()
        guard let job = try await queue.job(id) else {
            throw CLIError(message: "no job with id \(id); list jobs with `jobq list`", exitCode: .notFound)
        }
        if json {
            print(job.jsonLine)
            return
        }
        var rows: [[String]] = [
            ["id", String(job.id)], ["queue", job.queue], ["executor", job.executor], ["state", job.state.rawValue],
            ["priority", String(job.priority)], ["attempt", "\(job.attempt) of \(job.maxAttempts)"],
            ["payload", job.payloadJSON], ["result", job.resultJSON ?? "-"], ["error", job.error ?? "-"],
            ["runAt", isoString(job.runAt)], ["timeout", job.timeout.map(DurationParser.format) ?? "-"],
            ["createdAt", isoString(job.createdAt)]
        ]
        rows.append(["startedAt", job.startedAt.map(isoString) ?? "-"])
        rows.append(["finishedAt", job.finishedAt.map(isoString) ?? "-"])
        // Only when set: most jobs have neither.
        if let expiresAt = job.expiresAt { rows.append(["expiresAt", isoString(expiresAt)]) }
        if let key = job.uniqueKey { rows.append(["unique", key]) }
        if let partition = job.partition { rows.append(["partition", partition]) }
        print(Table.render(rows))
        // A durable function's record, when it has one.
        let steps = try await queue.functionSteps(of: job.id)
        if !steps.isEmpty {
            print("\nsteps:")
            print(FunctionStepsTable.render(steps, jobState: job.state))
        }
    }
}
