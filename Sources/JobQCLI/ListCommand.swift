import ArgumentParser
import Foundation
import JobQ
import JobQCommandLine

struct ListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "List jobs in id order.")

    @OptionGroup var store: StoreOptions

    @Option(help: "Only jobs on this queue.")
    var queue: String?

    @Option(help: "Only jobs in this state: scheduled, ready, running, succeeded, failed, dead, cancelled.")
    var state: String?

    @Option(help: "At most this many jobs.")
    var limit: Int = 100

    @Option(help: "Only jobs with an id greater than this (to page through).")
    var after: Int64?

    @Flag(help: "Print JSON Lines: one job object per line.")
    var json = false

    func run() async throws {
        let state = try self.state.map { try parseState($0, option: "--state") }
        guard limit >= 0 else { throw CLIError.usage("--limit must not be negative, got \(limit)") }
        let queue = try await store.open()
        let jobs = try await queue.jobs(queue: self.queue, state: state, limit: limit, after: after)
        if json {
            for job in jobs { print(job.jsonLine) }
            return
        }
        var rows = [["ID", "STATE", "QUEUE", "EXECUTOR", "ATTEMPT", "PRIORITY", "RUN AT", "ERROR"]]
        for job in jobs {
            let error: String = job.error.map { String($0.prefix(60)) } ?? ""
            let attempt = "\(job.attempt)/\(job.maxAttempts)"
            let row: [String] = [String(job.id), job.state.rawValue, job.queue, job.executor]
            rows.append(row + [attempt, String(job.priority), isoString(job.runAt), error])
        }
        print(Table.render(rows))
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
    }
}
