import Foundation
import HTTPTypes
import Hummingbird
import JobQCore
import Logging

/// jobq's HTTP API (`/api/v1`): enqueue jobs (one or a batch, with every option of a job line),
/// read them (one, or a page by the filter language), wait for a job to finish, retry and
/// cancel, pause and resume queues, emit events and signal durable functions, from any
/// language. `jobq dashboard` serves it beside its pages; ``addRoutes(to:)`` mounts it on a
/// router of your own. `GET /api/v1/openapi.json` describes it (OpenAPI 3.1).
///
/// Every request carries a token made with `jobq token add` (``JobQueue/addAPIToken(named:scopes:)``)
/// as `Authorization: Bearer SECRET`, whatever address the server listens on: without a valid
/// one it gets 401, and 403 without the endpoint's scope. Bodies are JSON, bounded (a job 2 MiB,
/// a batch 1,000 jobs and 16 MiB); bad input gets 400 with the field named.
///
/// ```swift
/// let router = Router()
/// HTTPAPI(queue: queue).addRoutes(to: router)
/// ```
///
/// ```sh
/// curl -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
///      -d '{"executor": "sum", "payload": {"a": 1, "b": 2}}' http://127.0.0.1:8080/api/v1/jobs
/// ```
public struct HTTPAPI: Sendable {
    public struct Options: Sendable {
        /// Requests waiting for a job's result at once; more get 503.
        public var maximumWaits: Int
        /// The longest a request may wait for a job's result (`?wait=SECONDS`).
        public var longestWait: Duration

        public init(maximumWaits: Int = 64, longestWait: Duration = .seconds(60)) {
            self.maximumWaits = maximumWaits
            self.longestWait = longestWait
        }
    }

    let queue: JobQueue
    let options: Options
    /// Slots for requests that wait for a result, so that a flood of them cannot hold every
    /// connection and feed reader of the server.
    let waits: StreamCounter

    public init(queue: JobQueue, options: Options = Options()) {
        self.queue = queue
        self.options = options
        waits = StreamCounter(limit: options.maximumWaits)
    }

    /// The API's path prefix.
    public static let prefix = "/api/v1"

    /// Adds every endpoint of ``endpoints`` to `router`, each behind the token check.
    public func addRoutes<Context: RequestContext>(to router: Router<Context>) {
        for endpoint in Self.endpoints {
            router.on(RouterPath(endpoint.routerPath), method: endpoint.method) { request, context -> Response in
                await respond(endpoint, request: request, context: context)
            }
        }
    }

    private func respond(_ endpoint: APIEndpoint, request: Request, context: some RequestContext) async -> Response {
        let name = "\(request.method) \(request.uri.path)"
        do {
            let token = try await authenticate(request, scope: endpoint.scope)
            var body = ""
            if let limit = endpoint.bodyLimit {
                body = try await Self.body(of: request, upTo: limit)
            }
            var parameters: [String: String] = [:]
            for parameter in endpoint.parameterNames {
                parameters[parameter] = context.parameters.get(parameter)
            }
            var query: [String: String] = [:]
            for (key, value) in request.uri.queryParameters { query[String(key)] = String(value) }
            let apiRequest = APIRequest(token: token, parameters: parameters, query: query, body: body)
            return try await endpoint.handle(self, apiRequest)
        } catch {
            return APIError.from(error, logger: context.logger, request: name).response
        }
    }

    /// The token the request carries, if it is valid and has `scope` (nil: any scope).
    private func authenticate(_ request: Request, scope: APIScope?) async throws -> APIToken {
        guard let authorization = request.headers[.authorization], authorization.hasPrefix("Bearer ") else {
            throw APIError(
                status: .unauthorized,
                message: "send a token of the API as `Authorization: Bearer SECRET` (make one with `jobq token add`)")
        }
        let secret = authorization.dropFirst("Bearer ".count).trimmingCharacters(in: .whitespaces)
        guard let token = try await queue.apiToken(forSecret: secret) else {
            throw APIError(
                status: .unauthorized,
                message: "the token is not valid here: revoked, or not made for this store (`jobq token list`)")
        }
        if let scope, !token.allows(scope) {
            throw APIError(
                status: .forbidden,
                message: "the token \(token.name) has no '\(scope.rawValue)' scope, which this request needs; "
                    + "make one that has it with `jobq token add NAME --scope \(APIScope.text(token.scopes.union([scope])))`"
            )
        }
        return token
    }

    /// The body as UTF-8 text, at most `limit` bytes, sent as JSON.
    private static func body(of request: Request, upTo limit: Int) async throws -> String {
        let type = request.headers[.contentType] ?? ""
        guard type.hasPrefix("application/json") else {
            throw APIError(
                status: .unsupportedMediaType,
                message: "the body is JSON: send it with `Content-Type: application/json`"
                    + (type.isEmpty ? "" : ", not \(type)"))
        }
        let buffer = try await request.body(
            upTo: limit,
            tooLarge: APIError(
                status: .contentTooLarge,
                message: "this request's body is at most \(limit / 1024) KiB; this one is larger"
            ))
        guard let text = buffer.getString(at: buffer.readerIndex, length: buffer.readableBytes),
            text.utf8.count == buffer.readableBytes
        else {
            throw APIError.badRequest("the body is not UTF-8 text")
        }
        return text
    }
}

/// One endpoint of the API: what ``HTTPAPI/addRoutes(to:)`` mounts and the OpenAPI document
/// describes (a test holds the two to each other).
struct APIEndpoint: Sendable {
    let method: HTTPRequest.Method
    /// As OpenAPI writes it: `/api/v1/jobs/{id}`.
    let path: String
    /// The scope a token needs; nil: any valid token.
    let scope: APIScope?
    /// The most bytes of body read; nil: none is read.
    let bodyLimit: Int?
    let handle: @Sendable (HTTPAPI, APIRequest) async throws -> Response

    /// The path as the router writes it: `/api/v1/jobs/:id`.
    var routerPath: String {
        path.split(separator: "/", omittingEmptySubsequences: false).map { part in
            part.hasPrefix("{") && part.hasSuffix("}") ? ":" + part.dropFirst().dropLast() : part
        }.joined(separator: "/")
    }

    var parameterNames: [String] {
        path.split(separator: "/").filter { $0.hasPrefix("{") && $0.hasSuffix("}") }.map {
            String($0.dropFirst().dropLast())
        }
    }
}
