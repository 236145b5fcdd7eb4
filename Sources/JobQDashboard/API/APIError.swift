import Foundation
import HTTPTypes
import Hummingbird
import JobQCore
import Logging

/// A refusal of the HTTP API: its status, and a JSON body that says what was wrong and what to
/// do, naming the field at fault where there is one:
/// `{"error": {"status": 400, "message": "...", "field": "limit"}}`.
struct APIError: Error {
    let status: HTTPResponse.Status
    let message: String
    var field: String?

    static func badRequest(_ message: String, field: String? = nil) -> APIError {
        APIError(status: .badRequest, message: message, field: field)
    }

    var response: Response {
        var object = JSONObjectBuilder()
        object.add("status", int: status.code)
        object.add("message", string: message)
        object.add("field", string: field)
        var headers: HTTPFields = [:]
        if status == .unauthorized { headers[.wwwAuthenticate] = #"Bearer realm="jobq""# }
        return .apiJSON(#"{"error":"# + object.text + "}", status: status, headers: headers)
    }

    /// The API's answer to an error an endpoint threw: the store's refusals with their own
    /// status (bad input 400, unknown 404, not in a state that allows it 409, unavailable 503);
    /// anything else a 500 whose details go to the log only (they may name the store's host).
    static func from(_ error: any Error, logger: Logger, request: String) -> APIError {
        switch error {
        case let error as APIError: return error
        case JobQueueError.invalidInput(let message): return .badRequest(message)
        case JobQueueError.notFound(let message): return APIError(status: .notFound, message: message)
        case JobQueueError.invalidState(let message): return APIError(status: .conflict, message: message)
        case JobResultError.noSuchJob(let id):
            return APIError(status: .notFound, message: "no job with id \(id)")
        case JobQueueError.storeUnavailable:
            logger.error("API \(request): the store did not answer: \(error)")
            return APIError(status: .serviceUnavailable, message: "the store did not answer; try again shortly")
        default:
            logger.error("API \(request) failed: \(error)")
            return APIError(status: .internalServerError, message: "the request failed; the server's log says why")
        }
    }
}

extension Response {
    /// A JSON body (`text`, already JSON) that no cache keeps.
    static func apiJSON(_ text: String, status: HTTPResponse.Status = .ok, headers: HTTPFields = [:]) -> Response {
        var fields = headers
        fields[.contentType] = "application/json"
        fields[.cacheControl] = "no-store"
        return Response(status: status, headers: fields, body: .init(byteBuffer: ByteBuffer(string: text + "\n")))
    }
}

extension HTTPField.Name {
    static let wwwAuthenticate = Self("WWW-Authenticate")!
}
