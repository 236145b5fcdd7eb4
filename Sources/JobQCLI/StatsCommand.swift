import ArgumentParser
import Foundation
import JobQ
import JobQCommandLine

struct StatsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stats",
        abstract: "What the workers did over a window: finished jobs by outcome, wait and run times, backlog.",
        discussion: """
            Prints one line per bucket (minutes for an hour, quarter hours for a day, hours for a \
            week): attempts that succeeded, were retried or died, jobs cancelled, the wait from \
            run time to start and the run time (p50, p95, longest), and the backlog at the \
            bucket's last sample. Workers add what they ran about every 10 s; one samples the \
            backlog once a minute.
              jobq stats --window 1h
              jobq stats --window 24h --queue mail --json
            """)

    @OptionGroup var store: StoreOptions
    @Option(help: "How far back: 1h, 24h or 7d, or any duration from 1m to 31d (e.g. 6h).") var window = "1h"
    @Option(
        help:
            "Buckets in the window (default: 60 for up to an hour, else one per quarter hour up to a day, else per hour)."
    )
    var buckets: Int?
    @Option(help: "Only this queue.") var queue: String?
    @Option(help: "Only this executor (no backlog or cancellations: those are kept by queue).") var executor: String?
    @Flag(help: "Print the history as one JSON object.") var json = false

    func run() async throws {
        let duration: Duration
        do {
            duration = try DurationParser.parse(window)
        } catch {
            throw CLIError.usage("--window: \(error.description)")
        }
        let seconds = duration.inSeconds
        let count =
            buckets
            ?? (seconds <= 3600
                ? Int(max(seconds / 60, 1)) : seconds <= 86_400 ? Int(seconds / 900) : Int(seconds / 3600))
        let history: History
        do {
            history = try await store.open().history(
                over: duration, buckets: max(count, 1), queue: queue, executor: executor)
        } catch let error as JobQueueError {
            if case .invalidInput(let message) = error { throw CLIError.usage(message) }
            throw error
        }
        if json {
            print(history.json)
            return
        }
        func time(_ value: Double?) -> String {
            guard let value else { return "-" }
            return value < 1 ? String(format: "%.0fms", value * 1000) : String(format: "%.1fs", value)
        }
        var rows = [
            ["FROM", "SUCCEEDED", "RETRIED", "DEAD", "CANCELLED", "WAIT p50/p95/max", "RUN p50/p95/max", "BACKLOG"]
        ]
        for bucket in history.buckets {
            let backlog = History.backlogStates.compactMap { state in
                bucket.backlog[state].map { "\($0) \(state.rawValue)" }
            }.joined(separator: ", ")
            rows.append([
                isoString(bucket.start), "\(bucket.succeeded)", "\(bucket.retried)", "\(bucket.dead)",
                "\(bucket.cancelled)",
                "\(time(bucket.waitP50))/\(time(bucket.waitP95))/\(time(bucket.waitMax))",
                "\(time(bucket.runP50))/\(time(bucket.runP95))/\(time(bucket.runMax))", backlog.isEmpty ? "-" : backlog
            ])
        }
        print(Table.render(rows))
    }
}
