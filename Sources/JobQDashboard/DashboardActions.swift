import Foundation
import Hummingbird
import JobQCore
import JobQWebText
import NIOCore

extension Dashboard {
    func addActionRoutes<Context: RequestContext>(to router: Router<Context>) {
        action(router, "/jobs/:id/retry") { context, _ in
            let id = try Self.jobID(context.parameters.get("id"))
            try await queue.retry(id)
            return "/jobs/\(id)"
        }
        action(router, "/jobs/:id/cancel") { context, _ in
            let id = try Self.jobID(context.parameters.get("id"))
            try await queue.cancel(id)
            return "/jobs/\(id)"
        }
        action(router, "/jobs/:id/signal") { context, form in
            let id = try Self.jobID(context.parameters.get("id"))
            // An empty payload field is a signal without one.
            let payload = form["payload"].flatMap { $0.trimmingCharacters(in: .whitespaces).isEmpty ? nil : $0 }
            _ = try await queue.signal(job: id, name: try Self.field(form, "name"), payloadJSON: payload)
            return "/jobs/\(id)"
        }
        action(router, "/jobs/:id/delete") { context, _ in
            let id = try Self.jobID(context.parameters.get("id"))
            try await queue.delete(id)
            return "/jobs"
        }
        action(router, "/queues/pause") { _, form in
            try await queue.pause(queue: try Self.field(form, "queue"))
            return "/"
        }
        action(router, "/queues/resume") { _, form in
            try await queue.resume(queue: try Self.field(form, "queue"))
            return "/"
        }
        action(router, "/workflows/:id/cancel") { context, _ in
            let id = try Self.workflowID(context.parameters.get("id"))
            _ = try await queue.cancelWorkflow(id)
            return "/workflows/\(id)"
        }
        action(router, "/schedules/pause") { _, form in
            _ = try await queue.pauseSchedule(try Self.field(form, "name"))
            return "/schedules"
        }
        action(router, "/schedules/resume") { _, form in
            _ = try await queue.resumeSchedule(try Self.field(form, "name"))
            return "/schedules"
        }
        router.post("/login") { request, _ -> Response in
            let form = try await Self.form(request)
            guard let token = options.accessToken else {
                return Response(status: .seeOther, headers: [.location: "/"])
            }
            guard let given = form["token"], constantTimeEqual(given, token) else {
                return Pages.login(dashboard: self, status: .forbidden, message: "That is not the access token.")
            }
            // The cookie carries a session id that expires, never the token itself.
            let session = sessions.open()
            return Response(
                status: .seeOther,
                headers: [
                    .location: "/",
                    .setCookie:
                        "\(Self.sessionCookie)=\(session); Path=/; Max-Age=\(sessions.lifetimeSeconds); HttpOnly; SameSite=Strict"
                ])
        }
    }

    /// A POST action: checks the form token, runs `perform`, and answers 303 to the page it
    /// returns. Bad input is a 400, an unknown id a 404, an action the state does not allow
    /// a 409, each with the store's message; the store is left as it was.
    private func action<Context: RequestContext>(
        _ router: Router<Context>, _ path: RouterPath,
        _ perform: @escaping @Sendable (Context, [String: String]) async throws -> String
    ) {
        router.post(path) { request, context -> Response in
            do {
                let form = try await Self.form(request)
                if let refusal = tokenRefusal(form) { return refusal }
                return Response(status: .seeOther, headers: [.location: try await perform(context, form)])
            } catch {
                return try failure(error, request: request, context: context)
            }
        }
    }

    /// A 403 for a form without this dashboard's form token; nil when it carries it.
    func tokenRefusal(_ form: [String: String]) -> Response? {
        guard let given = form["csrf"], constantTimeEqual(given, formToken) else {
            return Pages.error(
                .forbidden, "Refused: the form token is missing or stale. Reload the page and try again.",
                dashboard: self)
        }
        return nil
    }

    static func field(_ form: [String: String], _ name: String) throws -> String {
        guard let value = form[name], !value.isEmpty else { throw BadRequest(message: "the form has no '\(name)'") }
        return value
    }

    /// The largest form an action reads: its fields are ids, names and a token.
    static let maximumFormBytes = 64 * 1024

    /// An `application/x-www-form-urlencoded` body (at most 64 KiB) as fields.
    static func form(_ request: Request) async throws -> [String: String] {
        let type = request.headers[.contentType] ?? ""
        guard type.isEmpty || type.hasPrefix("application/x-www-form-urlencoded") else {
            throw BadRequest(message: "actions take a form (application/x-www-form-urlencoded), not \(type)")
        }
        let buffer = try await request.body(
            upTo: maximumFormBytes,
            tooLarge: HTTPError(
                .contentTooLarge, message: "A form is at most \(maximumFormBytes / 1024) KiB; this one is larger."))
        return FormBody.parse(String(buffer: buffer))
    }
}

extension Request {
    /// The body, at most `limit` bytes; a larger one throws `tooLarge`: the client's doing, to
    /// be answered 413, not a failure of the server's.
    func body(upTo limit: Int, tooLarge: @autoclosure () -> any Error) async throws -> ByteBuffer {
        var request = self
        do {
            return try await request.collectBody(upTo: limit)
        } catch is NIOTooManyBytesError {
            throw tooLarge()
        }
    }
}
