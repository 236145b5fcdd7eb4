import Foundation
import Hummingbird
import JobQCore

extension HTTPAPI {
    /// A job and a payload are at most 1 MiB each; a body of one job, its options and the JSON
    /// escapes around them fits in 2.
    static let jobBodyBytes = 2 << 20
    static let batchBodyBytes = 16 << 20
    static let maximumBatch = 1_000

    /// Every endpoint, as mounted and as `openapi.json` describes them.
    static let endpoints: [APIEndpoint] = [
        APIEndpoint(method: .get, path: prefix + "/openapi.json", scope: nil, bodyLimit: nil) { _, _ in
            .apiJSON(APIDocument.json)
        },
        APIEndpoint(method: .post, path: prefix + "/jobs", scope: .enqueue, bodyLimit: jobBodyBytes) { api, request in
            try JSONBody.checkDepth(request.body)
            let job = try jobRequest(request.body, at: nil)
            let outcome = try await api.queue.enqueueReportingDuplicates(contentsOf: [job])[0]
            return .apiJSON(enqueued(outcome), status: outcome.existed ? .ok : .created)
        },
        APIEndpoint(method: .post, path: prefix + "/jobs/batch", scope: .enqueue, bodyLimit: batchBodyBytes) {
            api, request in
            let jobs = try batch(request.body)
            let outcomes = try await api.queue.enqueueReportingDuplicates(contentsOf: jobs)
            return .apiJSON(#"{"jobs":["# + outcomes.map(enqueued).joined(separator: ",") + "]}", status: .created)
        },
        APIEndpoint(method: .get, path: prefix + "/jobs", scope: .read, bodyLimit: nil) { api, request in
            var query = JobQuery(limit: try request.integer("limit", in: 1...1000, otherwise: 50))
            if let text = request.query["before"] {
                guard let before = JobID(text), before > 0 else {
                    throw APIError.badRequest("before is a job id (the last of the previous page)", field: "before")
                }
                query.before = before
            }
            if let expression = request.query["where"] {
                do throws(JobQueueError) {
                    query.filter = try JobFilter(expression)
                } catch {
                    throw APIError.badRequest("where: \(error.description)", field: "where")
                }
            }
            let jobs = try await api.queue.jobs(matching: query)
            let next = jobs.count == query.limit ? jobs.last.map { String($0.id) } ?? "null" : "null"
            return .apiJSON(#"{"jobs":["# + jobs.map(\.jsonLine).joined(separator: ",") + #"],"next":"# + next + "}")
        },
        APIEndpoint(method: .get, path: prefix + "/jobs/{id}", scope: .read, bodyLimit: nil) { api, request in
            let id = try request.jobID()
            guard let job = try await api.queue.job(id) else { throw JobResultError.noSuchJob(id) }
            return .apiJSON(#"{"job":"# + job.jsonLine + "}")
        },
        APIEndpoint(method: .get, path: prefix + "/jobs/{id}/result", scope: .read, bodyLimit: nil) { api, request in
            let id = try request.jobID()
            let longest = Int(api.options.longestWait.inSeconds)
            let wait = try request.integer("wait", in: 0...longest, otherwise: 0)
            var slot: StreamCounter.Slot?
            if wait > 0 {
                slot = api.waits.enter()
                guard slot != nil else {
                    throw APIError(
                        status: .serviceUnavailable,
                        message: "\(api.options.maximumWaits) requests wait for results already; try again shortly")
                }
            }
            defer { slot?.giveBack() }
            if let finished = try await api.queue.finishedJob(id, waitingUpTo: .seconds(wait)) {
                return .apiJSON(#"{"finished":true,"job":"# + finished.jsonLine + "}")
            }
            guard let job = try await api.queue.job(id) else { throw JobResultError.noSuchJob(id) }
            return .apiJSON(#"{"finished":false,"job":"# + job.jsonLine + "}", status: .accepted)
        },
        APIEndpoint(method: .post, path: prefix + "/jobs/{id}/retry", scope: .operate, bodyLimit: nil) { api, request in
            .apiJSON(#"{"job":"# + (try await api.queue.retry(try request.jobID())).jsonLine + "}")
        },
        APIEndpoint(method: .post, path: prefix + "/jobs/{id}/cancel", scope: .operate, bodyLimit: nil) {
            api, request in
            .apiJSON(#"{"job":"# + (try await api.queue.cancel(try request.jobID())).jsonLine + "}")
        },
        APIEndpoint(method: .post, path: prefix + "/jobs/{id}/signals", scope: .enqueue, bodyLimit: jobBodyBytes) {
            api, request in
            let fields = try request.object()
            try only(["name", "payload"], in: fields)
            let receipt = try await api.queue.signal(
                job: try request.jobID(), name: try name(fields), payloadJSON: fields["payload"]?.text)
            return .apiJSON(#"{"signal":\#(receipt.id),"wokeJob":\#(receipt.wokeJob)}"#, status: .created)
        },
        APIEndpoint(method: .post, path: prefix + "/queues/{name}/pause", scope: .operate, bodyLimit: nil) {
            api, request in
            let name = request.parameters["name"] ?? ""
            try await api.queue.pause(queue: name)
            return .apiJSON(#"{"queue":"# + JSONText.string(name) + #","paused":true}"#)
        },
        APIEndpoint(method: .post, path: prefix + "/queues/{name}/resume", scope: .operate, bodyLimit: nil) {
            api, request in
            let name = request.parameters["name"] ?? ""
            try await api.queue.resume(queue: name)
            return .apiJSON(#"{"queue":"# + JSONText.string(name) + #","paused":false}"#)
        },
        APIEndpoint(method: .get, path: prefix + "/history", scope: .read, bodyLimit: nil) { api, request in
            let text = request.query["window"] ?? "1h"
            let window: Duration
            do throws(JobQueueError) {
                window = try DurationParser.parse(text)
            } catch {
                throw APIError.badRequest("window: \(error.description)", field: "window")
            }
            let buckets = try request.integer("buckets", in: 1...1440, otherwise: 60)
            do {
                let history = try await api.queue.history(
                    over: window, buckets: buckets, queue: request.query["queue"], executor: request.query["executor"])
                return .apiJSON(history.json)
            } catch JobQueueError.invalidInput(let message) {
                throw APIError.badRequest(message, field: "window")
            }
        },
        APIEndpoint(method: .post, path: prefix + "/events", scope: .enqueue, bodyLimit: jobBodyBytes) { api, request in
            let fields = try request.object()
            try only(["name", "payload", "dedupe"], in: fields)
            var dedupe: String?
            if let value = fields["dedupe"] {
                guard let text = value.stringValue else {
                    throw APIError.badRequest("dedupe is a string (a key the same emit repeats)", field: "dedupe")
                }
                dedupe = text
            }
            let emitted = try await api.queue.emit(
                try name(fields), payloadJSON: fields["payload"]?.text ?? "{}", dedupe: dedupe)
            let jobs = emitted.jobs.map(\.jsonLine).joined(separator: ",")
            let resumed = emitted.resumedFunctions.map { String($0) }.joined(separator: ",")
            return .apiJSON(
                #"{"deduplicated":\#(emitted.deduplicated),"jobs":[\#(jobs)],"resumedFunctions":[\#(resumed)]}"#,
                status: emitted.deduplicated ? .ok : .created)
        }
    ]

    /// One job of a body: the format of a line of `jobq enqueue --file`; `index` names its place
    /// in a batch.
    private static func jobRequest(_ text: String, at index: Int?) throws -> JobRequest {
        let place = index.map { "jobs[\($0)]" }
        do throws(JobQueueError) {
            return try JobRequest(jsonLine: text)
        } catch {
            throw APIError.badRequest((place.map { "\($0): " } ?? "") + error.description, field: place)
        }
    }

    /// The jobs of a batch: `{"jobs": [job, ...]}`, each as ``jobRequest(_:at:)`` reads it.
    private static func batch(_ text: String) throws -> [JobRequest] {
        guard case .object(let members) = try JSONBody.parse(text),
            members.count == 1, members[0].key == "jobs", case .array(let elements) = members[0].value
        else {
            throw APIError.badRequest(
                #"a batch is {"jobs": [...]}, each job an object like {"executor": "sum", "payload": {}}"#,
                field: "jobs")
        }
        guard (1...maximumBatch).contains(elements.count) else {
            throw APIError.badRequest(
                "a batch holds 1 to \(maximumBatch) jobs, not \(elements.count); send more in several batches",
                field: "jobs")
        }
        return try elements.enumerated().map { index, element in try jobRequest(element.text, at: index) }
    }

    /// `{"job": ..., "existed": ...}` for one job enqueued (or found holding its unique key).
    private static func enqueued(_ outcome: Enqueued) -> String {
        #"{"existed":\#(outcome.existed),"job":"# + outcome.job.jsonLine + "}"
    }

    private static func name(_ fields: [String: OrderedJSON]) throws -> String {
        guard let name = fields["name"]?.stringValue, !name.isEmpty else {
            throw APIError.badRequest("name is required: a non-empty string", field: "name")
        }
        return name
    }

    private static func only(_ keys: Set<String>, in fields: [String: OrderedJSON]) throws {
        if let unknown = fields.keys.sorted().first(where: { !keys.contains($0) }) {
            throw APIError.badRequest(
                "unknown key \(JSONText.preview(unknown)); the keys are " + keys.sorted().joined(separator: ", "),
                field: unknown)
        }
    }
}
