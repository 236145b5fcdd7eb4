import Foundation
import Hummingbird
import JobQCore
import JobQWebText

extension Dashboard {
    /// Schedules: timing, next run, the last runs' outcomes, pause and resume.
    func schedulesPage(_ request: Request) async throws -> PageContent {
        let schedules = try await queue.schedules()
        var rows: [String] = []
        for schedule in schedules {
            let runs = try await queue.scheduleRuns(schedule.name, limit: 5)
            let recent = runs.map {
                "<a href=\"/jobs/\($0.id)\" title=\"#\($0.id)\">\(HTML.badge($0.state.rawValue))</a>"
            }.joined(separator: " ")
            let action =
                schedule.paused
                ? Pages.action("/schedules/resume", "Resume", fields: ["name": schedule.name], dashboard: self)
                : Pages.action(
                    "/schedules/pause", "Pause", fields: ["name": schedule.name], dashboard: self, style: "quiet")
            rows.append(
                Pages.row([
                    HTML.escape(schedule.name), HTML.escape(schedule.timingDescription),
                    "<code>\(HTML.escape(schedule.executor))</code>",
                    HTML.escape(schedule.queue), schedule.paused ? HTML.badge("paused") : Self.upcoming(schedule),
                    "\(schedule.made)",
                    recent.isEmpty ? "<span class=\"muted\">none yet</span>" : recent, action
                ]))
        }
        let body = Pages.table(
            ["Schedule", "When", "Executor", "Queue", "Next runs", "Jobs made", "Last runs (newest first)", ""], rows,
            empty: "No schedules: add one with `jobq schedule add`.")
        return PageContent(
            title: "Schedules", section: "/schedules", live: Live(scope: .any, fragmentURL: Self.fragmentURL(request)),
            body: body)
    }

    /// The next three occurrences, the first in full.
    static func upcoming(_ schedule: ScheduleStatus) -> String {
        let dates = schedule.upcoming(3)
        guard let first = dates.first else { return "<span class=\"muted\">none</span>" }
        let later = dates.dropFirst().map { "<br><span class=\"muted\">\(HTML.time($0))</span>" }.joined()
        return HTML.time(first) + later
    }

    /// Event triggers: what each event runs, its ordering and whether it ran once.
    func triggersPage(_ request: Request) async throws -> PageContent {
        let triggers = try await queue.triggers()
        let rows = triggers.map { trigger in
            Pages.row([
                HTML.escape(trigger.event), HTML.escape(trigger.task), "<code>\(HTML.escape(trigger.executor))</code>",
                HTML.escape(trigger.queue),
                trigger.dependsOn.isEmpty
                    ? "<span class=\"muted\">–</span>" : HTML.escape(trigger.dependsOn.joined(separator: ", ")),
                trigger.once ? (trigger.ranOnceAt.map { "ran \(HTML.time($0))" } ?? "once, not yet") : "every time",
                trigger.paused ? HTML.badge("paused") : "<span class=\"muted\">no</span>"
            ])
        }
        let body = Pages.table(
            ["Event", "Task", "Executor", "Queue", "After", "Runs", "Paused"], rows,
            empty: "No triggers: add one with `jobq trigger add`.")
        return PageContent(
            title: "Triggers", section: "/triggers", live: Live(scope: .any, fragmentURL: Self.fragmentURL(request)),
            body: body)
    }

    /// Batches with their counts, and tracking sets with their members.
    func batchesPage(_ request: Request) async throws -> PageContent {
        let batches = try await queue.batches()
        let sets = try await queue.trackingSets()
        let batchRows = batches.map { batch in
            Pages.row([
                HTML.escape(batch.name), HTML.badge(batch.state.rawValue), "\(batch.total)",
                "\(batch.succeeded)", "\(batch.dead)", "\(batch.cancelled)", "\(batch.pending)",
                HTML.time(batch.createdAt),
                HTML.time(batch.firedAt)
            ])
        }
        let setRows = sets.map { set in
            Pages.row([
                HTML.escape(set.name), HTML.escape(set.members.joined(separator: ", ")), "\(set.round)",
                HTML.time(set.createdAt)
            ])
        }
        let body =
            "<h2>Batches</h2>"
            + Pages.table(
                ["Batch", "State", "Jobs", "Succeeded", "Dead", "Cancelled", "Pending", "Created", "Fired"], batchRows,
                empty: "No batches.")
            + "<h2>Tracking sets</h2>"
            + Pages.table(["Set", "Members", "Round", "Created"], setRows, empty: "No tracking sets.")
        return PageContent(
            title: "Batches and tracking sets", section: "/batches",
            live: Live(scope: .any, fragmentURL: Self.fragmentURL(request)), body: body)
    }
}
