import Foundation
import Hummingbird
import JobQCore
import JobQWebText

extension Dashboard {
    /// One job: its fields, payload, result, error, progress, the actions its state allows,
    /// a durable function's steps, and its event timeline.
    func jobPage(_ id: JobID, request: Request) async throws -> PageContent {
        guard let job = try await queue.job(id) else {
            throw JobQueueError.notFound("no job #\(id); it may have been pruned or deleted")
        }
        let events = try await queue.events(after: 0, filter: EventFilter(jobIDs: [id]), limit: 500)
        let steps = try await queue.functionSteps(of: id)
        var actions = ""
        if [.failed, .dead, .cancelled].contains(job.state) {
            actions += Pages.action("/jobs/\(id)/retry", "Retry", dashboard: self)
        }
        if !job.state.isFinal {
            actions += Pages.action("/jobs/\(id)/cancel", "Cancel", dashboard: self, style: "danger")
        }
        if job.state.isFinal {
            actions += Pages.action("/jobs/\(id)/delete", "Delete", dashboard: self, style: "danger")
        }
        func optional(_ value: String?) -> String { value.map(HTML.escape) ?? "<span class=\"muted\">–</span>" }
        var fields: [(String, String)] = [
            ("State", HTML.badge(job.state.rawValue)),
            ("Queue", "<a href=\"/jobs\(HTML.query([("queue", job.queue)]))\">\(HTML.escape(job.queue))</a>"),
            (
                "Executor",
                "<a href=\"/jobs\(HTML.query([("executor", job.executor)]))\">\(HTML.escape(job.executor))</a>"
            ),
            ("Name", optional(job.name)),
            ("Attempt", "\(job.attempt) of \(job.maxAttempts)"),
            ("Priority", "\(job.priority)"),
            ("Run at", HTML.time(job.runAt)),
            ("Created", HTML.time(job.createdAt)),
            ("Started", HTML.time(job.startedAt)),
            ("Finished", HTML.time(job.finishedAt))
        ]
        if let timeout = job.timeout { fields.append(("Timeout", HTML.escape("\(timeout)"))) }
        if let batch = job.batch { fields.append(("Batch", "<a href=\"/batches\">\(HTML.escape(batch))</a>")) }
        if let workflow = job.workflowID {
            fields.append(("Workflow", "<a href=\"/workflows/\(workflow)\">#\(workflow)</a>"))
        }
        if let lane = job.lane { fields.append(("Lane", HTML.escape(lane))) }
        if let key = job.uniqueKey { fields.append(("Unique key", "<code>\(HTML.escape(key))</code>")) }
        if let schedule = job.schedule {
            fields.append(("Schedule", "<a href=\"/schedules\">\(HTML.escape(schedule))</a>"))
        }
        if job.unmetDependencies > 0 { fields.append(("Waiting for", "\(job.unmetDependencies) job(s)")) }
        if job.snoozes > 0 { fields.append(("Snoozes", "\(job.snoozes)")) }
        if let progress = job.progress {
            let percent = Int((progress * 100).rounded())
            fields.append(
                (
                    "Progress",
                    "<progress max=\"100\" value=\"\(percent)\">\(percent)%</progress> \(percent)% \(optional(job.progressMessage))"
                ))
        }
        let details = "<dl class=\"fields\">" + fields.map { "<dt>\($0.0)</dt><dd>\($0.1)</dd>" }.joined() + "</dl>"
        func json(_ field: JobValueField) -> String {
            HTML.json(field.value(of: job), rawURL: "/jobs/\(id)/raw/\(field.rawValue)")
        }
        var sections = "<h2>Payload</h2>\(json(.payload))"
        if job.resultJSON != nil { sections += "<h2>Result</h2>\(json(.result))" }
        if let error = job.error {
            sections +=
                "<h2>Error</h2><pre class=\"error\">\(HTML.escape(HTML.capped(error, limit: HTML.jsonRenderLimit)))</pre>"
        }
        if job.updateJSON != nil { sections += "<h2>Progress data</h2>\(json(.progress))" }
        if job.checkpointJSON != nil { sections += "<h2>Checkpoint</h2>\(json(.checkpoint))" }
        if job.failedDependenciesJSON != nil { sections += "<h2>Failed dependencies</h2>\(json(.failedDependencies))" }
        sections += Self.stepsSection(steps, job: job) + signalForm(steps, job: job)
        let timeline = events.map { event in
            Pages.row([
                HTML.time(event.createdAt), HTML.badge(event.kind.rawValue),
                event.dataJSON.map { "<code>\(HTML.escape(HTML.capped($0, limit: Self.eventDataLimit)))</code>" } ?? ""
            ])
        }
        sections +=
            "<h2>Events</h2>"
            + Pages.table(["Time", "Event", "Data"], timeline, empty: "No events (pruned with old jobs).")
        let body = "<div class=\"actions\">\(actions)</div>\(details)\(sections)"
        return PageContent(
            title: "Job #\(id)", section: "/jobs", live: Live(scope: .job(id), fragmentURL: Self.fragmentURL(request)),
            body: body)
    }

    /// Bytes of one event's data the timeline shows.
    static let eventDataLimit = 2048

    /// `GET /jobs/:id/raw/:field`: one of a job's JSON values whole, as `application/json`
    /// (what a page shows only the start of).
    func rawJobValue(_ id: JobID, field text: String?) async throws -> Response {
        guard let text, let field = JobValueField(rawValue: text) else {
            throw BadRequest(
                message:
                    "'\(text ?? "")' is not a job value: give one of \(JobValueField.allCases.map(\.rawValue).joined(separator: ", "))"
            )
        }
        guard let job = try await queue.job(id) else {
            throw JobQueueError.notFound("no job #\(id); it may have been pruned or deleted")
        }
        guard let value = field.value(of: job) else {
            throw JobQueueError.notFound("job #\(id) has no \(field.rawValue)")
        }
        return Response(
            status: .ok, headers: [.contentType: "application/json; charset=utf-8", .cacheControl: "no-store"],
            body: .init(byteBuffer: ByteBuffer(string: value)))
    }
}

/// The JSON values a job carries, by the name their raw URL uses.
enum JobValueField: String, CaseIterable {
    case payload, result, progress, checkpoint
    case failedDependencies = "failed-dependencies"

    func value(of job: Job) -> String? {
        switch self {
        case .payload: job.payloadJSON
        case .result: job.resultJSON
        case .progress: job.updateJSON
        case .checkpoint: job.checkpointJSON
        case .failedDependencies: job.failedDependenciesJSON
        }
    }
}
