import Foundation
import Hummingbird
import JobQCore
import JobQWebText

extension Dashboard {
    func addPageRoutes<Context: RequestContext>(to router: Router<Context>) {
        page(router, "/") { request, _ in try await queuesPage(request) }
        page(router, "/jobs") { request, _ in try await jobsPage(request) }
        page(router, "/jobs/:id") { request, context in
            try await jobPage(try Self.jobID(context.parameters.get("id")), request: request)
        }
        page(router, "/workflows") { request, _ in try await workflowsPage(request) }
        page(router, "/workflows/:id") { request, context in
            try await workflowPage(try Self.workflowID(context.parameters.get("id")), request: request)
        }
        page(router, "/schedules") { request, _ in try await schedulesPage(request) }
        page(router, "/triggers") { request, _ in try await triggersPage(request) }
        page(router, "/batches") { request, _ in try await batchesPage(request) }
        page(router, "/history") { request, _ in try await historyPage(request) }
        router.get("/jobs/:id/raw/:field") { request, context -> Response in
            do {
                return try await rawJobValue(
                    try Self.jobID(context.parameters.get("id")), field: context.parameters.get("field"))
            } catch {
                return try failure(error, request: request, context: context)
            }
        }
        router.get("/login") { _, _ in Pages.login(dashboard: self, status: .ok, message: nil) }
    }

    /// A GET route answering a page, or its live part with `?fragment=1`; bad input is a 400
    /// and an unknown id a 404, each with what was wrong.
    private func page<Context: RequestContext>(
        _ router: Router<Context>, _ path: RouterPath,
        _ content: @escaping @Sendable (Request, Context) async throws -> PageContent
    ) {
        router.get(path) { request, context -> Response in
            let fragment = request.uri.queryParameters.get("fragment") == "1"
            do {
                let content = try await content(request, context)
                if request.uri.queryParameters.get("format") == "json", let json = content.json {
                    return .apiJSON(json)
                }
                return content.response(fragment: fragment, dashboard: self)
            } catch {
                return try failure(error, request: request, context: context)
            }
        }
    }

    /// What a page or an action answers when it throws: bad input 400, an unknown id 404, an
    /// action the state does not allow 409, each with the message; anything else 500, logged.
    func failure(_ error: any Error, request: Request, context: some RequestContext) throws -> Response {
        switch error {
        case let bad as BadRequest: return Pages.error(.badRequest, bad.message, dashboard: self)
        case JobQueueError.notFound(let message): return Pages.error(.notFound, message, dashboard: self)
        case JobQueueError.invalidState(let message): return Pages.error(.conflict, message, dashboard: self)
        case JobQueueError.invalidInput(let message): return Pages.error(.badRequest, message, dashboard: self)
        case let error as HTTPError: throw error  // e.g. a body over the limit: 413
        default:
            context.logger.error("dashboard \(request.method) \(request.uri.path) failed: \(error)")
            return Pages.error(.internalServerError, "The store did not answer: \(error)", dashboard: self)
        }
    }

    static func jobID(_ text: String?) throws -> JobID {
        guard let text, let id = JobID(text), id > 0 else {
            throw BadRequest(
                message: "'\(text ?? "")' is not a job id: job ids are whole numbers from 1 (see the jobs list)")
        }
        return id
    }

    static func workflowID(_ text: String?) throws -> WorkflowID {
        guard let text, let id = WorkflowID(text), id > 0 else {
            throw BadRequest(message: "'\(text ?? "")' is not a workflow id: workflow ids are whole numbers from 1")
        }
        return id
    }

    /// A query parameter, decoded as a browser's GET form encodes it (a space as `+`, a plus as
    /// `%2B`), so that a search typed into a form arrives as typed; nil when absent or empty.
    static func parameter(_ request: Request, _ name: String) -> String? {
        guard let value = FormBody.parse(request.uri.query ?? "")[name], !value.isEmpty else { return nil }
        return value
    }

    static func state(_ request: Request) throws -> JobState? {
        guard let text = parameter(request, "state") else { return nil }
        guard let state = JobState(rawValue: text) else {
            throw BadRequest(
                message: "state '\(text)' is not one of: \(JobState.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        return state
    }

    /// The page's own URL with `fragment=1`, for the live part.
    static func fragmentURL(_ request: Request) -> String {
        let query =
            request.uri.query.map {
                $0.split(separator: "&").filter { !$0.hasPrefix("fragment=") }.joined(separator: "&")
            } ?? ""
        return request.uri.path + "?" + (query.isEmpty ? "" : query + "&") + "fragment=1"
    }
}
