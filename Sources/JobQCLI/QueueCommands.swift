import ArgumentParser
import Foundation
import JobQ
import JobQCommandLine

struct QueueCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "queue",
        abstract: "Show a queue, set its limits across every worker and machine, or how long it keeps finished jobs.",
        subcommands: [QueueShowCommand.self, QueueLimitCommand.self, QueueRetentionCommand.self])
}

struct QueueLimitCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "limit",
        abstract: "Limit how many of a queue's jobs run at once and start per period, across every worker and machine.",
        discussion: helpText(
            """
            --concurrency N: at most N of the queue's jobs running at once. A job claimed ahead
            into a worker's buffer counts as running. A worker killed while it holds limited jobs
            holds their places until their leases expire and they are reclaimed. Lowering a
            limit stops nothing that runs: claims wait until fewer run.

            --rate N/PERIOD: at most N starts in any span of PERIOD (a sliding window; retries
            count). Its jobs are claimed only into free slots, never ahead, so a start is counted
            when it happens. Jobs held back stay ready and are claimed when the window allows.

            --partition-by /POINTER or job: the limits apply to each partition on its own: the
            payload member at the JSON pointer (e.g. /customer), or the partition given with
            `jobq enqueue --partition` (a job's own partition always wins). A full partition
            never holds back another partition's jobs.

            Options left out keep their setting; none removes one.

              jobq queue limit payments-api --concurrency 5
              jobq queue limit mail --rate 100/1m
              jobq queue limit reports --concurrency 2 --partition-by /customer
              jobq queue limit payments-api --concurrency none --rate none
            """))

    @OptionGroup var store: StoreOptions
    @Argument(help: "The queue's name.") var queue: String
    @Option(help: "At most this many of the queue's jobs at once (1 or more), or none.")
    var concurrency: String?
    @Option(
        help: ArgumentHelp("At most this many starts per period, e.g. 100/1m or 20/1s, or none.", valueName: "n/period")
    )
    var rate: String?
    @Option(
        help: ArgumentHelp(
            "Apply the limits per payload member (/customer) or per job partition (job), or none.", valueName: "pointer"
        ))
    var partitionBy: String?

    func run() async throws {
        guard concurrency != nil || rate != nil || partitionBy != nil else {
            throw CLIError.usage(
                "give --concurrency, --rate or --partition-by, e.g. `jobq queue limit \(queue) --concurrency 5`; "
                    + "`jobq queue show \(queue)` shows its limits")
        }
        let queue = try await store.open()
        var limits = try await queue.limits(for: self.queue)
        if let concurrency {
            if concurrency == "none" {
                limits.concurrency = nil
            } else if let number = Int(concurrency), number >= 1 {
                limits.concurrency = number
            } else {
                throw CLIError.usage(
                    "--concurrency \(concurrency) is not a number of 1 or more, nor none; e.g. --concurrency 5, or --concurrency none to remove the limit"
                )
            }
        }
        // Each option's error under its own name.
        do {
            if let rate { limits.rate = rate == "none" ? nil : try RateLimit(parsing: rate) }
        } catch {
            throw CLIError.usage("--rate: \(error.description)")
        }
        do {
            if let partitionBy {
                limits.partitionBy = partitionBy == "none" ? nil : try QueuePartitioning(parsing: partitionBy)
            }
        } catch {
            throw CLIError.usage("--partition-by: \(error.description)")
        }
        try await queue.setLimits(limits, for: self.queue)
        print("queue \(self.queue): \(limits.summary == "none" ? "no limits" : limits.summary)")
    }
}

struct QueueShowCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show",
        abstract: "Show a queue: paused or not, its limits and what they hold back, its jobs by state.",
        discussion: helpText(
            """
            A partitioned queue lists its busiest partitions (most jobs waiting for a place,
            then most running), at most --partitions of them.
            """))

    @OptionGroup var store: StoreOptions
    @Argument(help: "The queue's name.") var queue: String
    @Option(help: "How many of the busiest partitions to list.") var partitions = 10
    @Flag(help: "Print one JSON object.") var json = false

    /// `jobq queue show --json`: the queue's status and what its limits hold back.
    struct Shown: Encodable {
        var queue: QueueStatus
        var usage: QueueLimitUsage?
    }

    func run() async throws {
        guard partitions >= 0 else { throw CLIError.usage("--partitions must be 0 or more, got \(partitions)") }
        let jobQueue = try await store.open()
        let status = try await jobQueue.status()
        guard let entry = status.queues.first(where: { $0.name == queue }) else {
            throw CLIError(
                message:
                    "no queue \(queue) in \(store.location.description): it has no jobs and no settings; `jobq status` lists the queues",
                exitCode: .notFound)
        }
        let usage = try await jobQueue.limitUsage(of: queue, partitions: partitions)
        if json {
            print(try encodeJSON(Shown(queue: entry, usage: usage)))
            return
        }
        var rows = [["queue", entry.name], ["paused", entry.paused ? "yes" : "no"], ["limits", entry.limits.summary]]
        rows.append(["keeps", try await jobQueue.retention(for: queue).summary])
        if let usage, usage.limits.limitsAnything {
            rows.append(["waiting for a place", String(usage.waitingForCapacity)])
            if let started = usage.startsInWindow { rows.append(["starts in the rate's window", String(started)]) }
            if usage.limits.partitionBy != nil { rows.append(["partitions", String(usage.partitionCount)]) }
        }
        for state in JobState.allCases { rows.append([state.rawValue, String(entry.counts[state.rawValue] ?? 0)]) }
        print(Table.render(rows))
        guard let usage, !usage.busiestPartitions.isEmpty else { return }
        print("")
        var table = [["PARTITION", "RUNNING", "READY", "WAITING"] + (usage.startsInWindow == nil ? [] : ["STARTS"])]
        for partition in usage.busiestPartitions {
            table.append(
                [
                    partition.partition.isEmpty ? "(none)" : partition.partition, String(partition.running),
                    String(partition.ready), String(partition.waitingForCapacity)
                ]
                    + (partition.startsInWindow.map { [String($0)] } ?? []))
        }
        print(Table.render(table))
    }
}
