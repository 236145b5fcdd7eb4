import ArgumentParser
import Foundation
import JobQ
import JobQCommandLine

/// `--where` and `--dry-run` of `jobq retry|cancel|delete`: one job by id, or every job a filter
/// matches.
struct BulkSelection: ParsableArguments {
    @Option(
        name: .customLong("where"),
        // Taken whole even when it starts with '-' (a negated first term).
        parsing: .unconditional,
        help: ArgumentHelp(
            "Every job this filter matches (the language of `jobq list --where`) instead of one id.",
            valueName: "filter"))
    var filter: String?

    @Flag(help: "With --where: print how many jobs match and the first 10, and change nothing.")
    var dryRun = false

    /// The id or the filter, refusing neither or both before the store is opened.
    func target(_ id: Int64?, verb: String) throws -> Either {
        switch (id, filter) {
        case (let id?, nil):
            guard !dryRun else { throw CLIError.usage("--dry-run goes with --where; `jobq show \(id)` shows one job") }
            return .one(id)
        case (nil, let filter?): return .many(try JobFilter(filter))
        case (nil, nil): throw CLIError.usage("give a job's id, or --where FILTER to \(verb) every job it matches")
        case (_?, _?): throw CLIError.usage("give a job's id or --where, not both")
        }
    }

    enum Either {
        case one(Int64)
        case many(JobFilter)
    }

    /// Runs `action` over `filter`'s jobs: a live progress line on a terminal, then a summary of
    /// what changed and what was skipped, and why.
    static func run(_ action: BulkAction, _ filter: JobFilter, dryRun: Bool, on queue: JobQueue) async throws {
        let verb = action.rawValue
        if dryRun {
            let count = try await queue.count(where: filter)
            let sample = try await queue.jobs(where: filter, limit: 10)
            print(
                "would \(verb) up to \(count) job\(count == 1 ? "" : "s") matching \(filter.expression) (jobs it refuses are skipped)"
            )
            guard !sample.isEmpty else { return }
            var rows = [["ID", "STATE", "QUEUE", "EXECUTOR", "ATTEMPT", "ERROR"]]
            for job in sample {
                rows.append([
                    String(job.id), job.state.rawValue, job.queue, job.executor, "\(job.attempt)/\(job.maxAttempts)",
                    job.error.map { String($0.prefix(60)) } ?? ""
                ])
            }
            print(Table.render(rows))
            return
        }
        let output = TerminalOutput.shared
        let report = try await queue.perform(action, where: filter) { progress in
            guard output.isTerminal else { return }
            output.status(
                "\(verb): \(progress.done) of \(progress.total) jobs, \(progress.report.changed) changed, "
                    + "\(progress.report.skipped) skipped")
        }
        output.endStatus()
        let past = ["retry": "retried", "cancel": "cancelled", "delete": "deleted"][verb] ?? verb
        print("\(past) \(report.changed) of \(report.matched) matching job\(report.matched == 1 ? "" : "s")")
        for (reason, count) in report.skippedByReason.sorted(by: { $0.value > $1.value }) {
            print("skipped \(count): \(reason) (e.g. \(report.exampleRefusals[reason] ?? reason))")
        }
    }
}

struct DeleteCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete",
        abstract: "Delete a finished job and its events, or every finished job a filter matches.",
        discussion: """
            Jobs of workflows and lanes, and jobs something unfinished still refers to, are not \
            deleted (a bulk delete skips and counts them); `jobq prune` removes them once free.
              jobq delete 42
              jobq delete --where 'state:cancelled queue:imports' --dry-run
            """)

    @OptionGroup var store: StoreOptions
    @Argument(help: "The job's id.") var id: Int64?
    @OptionGroup var selection: BulkSelection

    func run() async throws {
        switch try selection.target(id, verb: "delete") {
        case .one(let id):
            try await store.open().delete(id)
            print("job \(id) deleted")
        case .many(let filter):
            try await BulkSelection.run(.delete, filter, dryRun: selection.dryRun, on: try await store.open())
        }
    }
}
