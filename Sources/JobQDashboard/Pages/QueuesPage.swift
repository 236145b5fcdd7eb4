import Foundation
import Hummingbird
import JobQCore
import JobQWebText

extension Dashboard {
    /// Counts by state per queue, throughput over the last hour, limits (with how many ready jobs
    /// wait for a place, and the busiest partitions), paused flags, live workers.
    func queuesPage(_ request: Request) async throws -> PageContent {
        let status = try await queue.status()
        let hour = try await queue.throughput(
            of: status.queues.map(\.name), over: .seconds(3600), interval: .seconds(300))
        let throughput = Dictionary(uniqueKeysWithValues: hour.map { ($0.queue, $0) })
        var usages: [String: QueueLimitUsage] = [:]
        for entry in status.queues where entry.limits.limitsAnything {
            usages[entry.name] = try await queue.limitUsage(of: entry.name, partitions: 10)
        }
        let states: [JobState] = [.ready, .scheduled, .running, .waiting, .failed, .succeeded, .dead, .cancelled]
        let rows = status.queues.map { queueStatus -> String in
            let name = queueStatus.name
            let counts = states.map { state -> String in
                let count = queueStatus.counts[state.rawValue] ?? 0
                guard count > 0 else { return "<span class=\"muted\">0</span>" }
                return
                    "<a class=\"count state-\(state.rawValue)\" href=\"/jobs\(HTML.query([("queue", name), ("state", state.rawValue)]))\">\(count)</a>"
            }
            let recent = throughput[name]
            let pause =
                queueStatus.paused
                ? Pages.action("/queues/resume", "Resume", fields: ["queue": name], dashboard: self)
                : Pages.action("/queues/pause", "Pause", fields: ["queue": name], dashboard: self, style: "quiet")
            return Pages.row(
                ["<a href=\"/jobs\(HTML.query([("queue", name)]))\">\(HTML.escape(name))</a>"] + counts + [
                    recent.map { Self.sparkline($0) } ?? "",
                    Self.limit(queueStatus.limits, usages[name]),
                    queueStatus.paused
                        ? HTML.badge("paused") + (queueStatus.pausedSince.map { " since " + HTML.time($0) } ?? "")
                        : "<span class=\"muted\">no</span>",
                    pause
                ])
        }
        let workers = status.workers.map { worker in
            Pages.row([
                "<code>\(HTML.escape(worker.id))</code>", HTML.escape(worker.host), "\(worker.pid)",
                HTML.escape(worker.queues.joined(separator: ", ")), "\(worker.concurrency)",
                HTML.time(worker.startedAt),
                HTML.time(worker.heartbeatAt)
            ])
        }
        // What no queue row shows: the whole store, and executors paused in every queue.
        var pauses: [String] = []
        if let since = status.allPausedSince {
            pauses.append(
                "\(HTML.badge("paused")) Every job is paused, since \(HTML.time(since)): no worker claims anything.")
        }
        for executor in status.pausedExecutors {
            pauses.append(
                "\(HTML.badge("paused")) Executor <code>\(HTML.escape(executor.name))</code> is paused in every queue, "
                    + "since \(HTML.time(executor.since)).")
        }
        let pauseNotes = pauses.map { "<p class=\"summary\">\($0)</p>" }.joined()
        let body = """
            \(pauseNotes)<p class="summary">\(status.queues.count) queue(s), \(status.runningWorkflows) running workflow(s), \(status.workers.count) live worker(s), schema version \(status.schemaVersion).</p>
            \(Pages.table(["Queue"] + states.map(\.rawValue) + ["Last hour", "Limit", "Paused", ""], rows, empty: "No jobs yet: enqueue one with `jobq enqueue`."))
            <h2>Workers</h2>
            \(Pages.table(["Worker", "Host", "PID", "Queues", "Concurrency", "Started", "Heartbeat"], workers, empty: "No worker has sent a heartbeat in the last 30 seconds."))
            """
        return PageContent(
            title: "Queues", section: "/", live: Live(scope: .any, fragmentURL: Self.fragmentURL(request)), body: body)
    }

    /// A queue's limits, how many ready jobs wait for a place, and for a partitioned queue its
    /// busiest partitions (folded away). Partition values come from payloads: escaped.
    static func limit(_ limits: QueueLimits, _ usage: QueueLimitUsage?) -> String {
        guard limits.limitsAnything else { return "<span class=\"muted\">none</span>" }
        var cell = HTML.escape(limits.summary)
        guard let usage else { return cell }
        if usage.waitingForCapacity > 0 { cell += ", <strong>\(usage.waitingForCapacity) waiting</strong>" }
        if let started = usage.startsInWindow {
            cell += " <span class=\"muted\">(\(started) started in the window)</span>"
        }
        guard !usage.busiestPartitions.isEmpty else { return cell }
        let rows = usage.busiestPartitions.map { partition in
            Pages.row([
                partition.partition.isEmpty ? "<span class=\"muted\">(none)</span>" : HTML.escape(partition.partition),
                "\(partition.running)", "\(partition.ready)", "\(partition.waitingForCapacity)"
            ])
        }
        return cell + """
            <details><summary>\(usage.partitionCount) partition(s), the busiest</summary>\(Pages.table(["Partition", "Running", "Ready", "Waiting"], rows, empty: ""))</details>
            """
    }

    /// Finished jobs per 5 minutes over the hour as bars (dead and cancelled stacked in red and
    /// grey on the successes), and the total.
    static func sparkline(_ throughput: QueueThroughput) -> String {
        let totals = throughput.succeeded.indices.map {
            throughput.succeeded[$0] + throughput.dead[$0] + throughput.cancelled[$0]
        }
        let peak = max(1, totals.max() ?? 1)
        let width = 5
        var bars = ""
        for index in totals.indices where totals[index] > 0 {
            var y = 20.0
            for (count, kind) in [
                (throughput.succeeded[index], "ok"), (throughput.dead[index], "dead"),
                (throughput.cancelled[index], "cancelled")
            ] where count > 0 {
                let height = max(1, Double(count) / Double(peak) * 20)
                y -= height
                bars +=
                    "<rect class=\"bar-\(kind)\" x=\"\(index * width)\" y=\"\(String(format: "%.1f", y))\" width=\"\(width - 1)\" height=\"\(String(format: "%.1f", height))\"/>"
            }
        }
        let label = "\(throughput.total) finished in the last hour (\(throughput.dead.reduce(0, +)) dead)"
        return
            "<span class=\"spark\" title=\"\(HTML.escape(label))\"><svg viewBox=\"0 0 \(totals.count * width) 20\" width=\"\(totals.count * width)\" height=\"20\" aria-hidden=\"true\">\(bars)</svg> \(throughput.total)</span>"
    }
}
