import ArgumentParser
import Foundation
import JobQ
import JobQCommandLine

struct StatusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract:
            "Show each queue's jobs by state, what is paused and since when, the queues' limits, and the live workers.")

    @OptionGroup var store: StoreOptions

    @Flag(help: "Print one JSON object.")
    var json = false

    func run() async throws {
        let queue = try await store.open()
        let status = try await queue.status()
        if json {
            print(try encodeJSON(status))
            return
        }
        let states = JobState.allCases.map(\.rawValue)
        var rows = [["QUEUE", "PAUSED", "LIMIT"] + states.map { $0.uppercased() }]
        for entry in status.queues {
            let paused = entry.pausedSince.map { "since " + isoString($0) } ?? (entry.paused ? "yes" : "no")
            rows.append(
                [entry.name, paused, entry.limits.limitsAnything ? entry.limits.summary : "-"]
                    + states.map { String(entry.counts[$0] ?? 0) })
        }
        if status.queues.isEmpty {
            print(
                "no jobs yet in \(store.location.description); add one with `jobq enqueue sum --param a=1 --param b=2`")
        } else {
            print(Table.render(rows))
        }
        if let since = status.allPausedSince {
            print("every job is paused, since \(isoString(since)): no worker claims anything (`jobq resume --all`)")
        }
        for executor in status.pausedExecutors {
            print(
                "executor \(executor.name) is paused in every queue, since \(isoString(executor.since)) "
                    + "(`jobq resume --executor \(executor.name)`)")
        }
        if status.runningWorkflows > 0 {
            print("\(status.runningWorkflows) running workflow(s); list them with `jobq workflow list --state running`")
        }
        print("")
        if status.workers.isEmpty {
            print("no live workers")
        } else {
            var workerRows = [["WORKER", "QUEUES", "CONCURRENCY", "STARTED", "LAST HEARTBEAT"]]
            for worker in status.workers {
                workerRows.append([
                    worker.id, worker.queues.joined(separator: ","), String(worker.concurrency),
                    isoString(worker.startedAt), isoString(worker.heartbeatAt)
                ])
            }
            print(Table.render(workerRows))
        }
    }
}

func isoString(_ date: Date) -> String {
    date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
}
