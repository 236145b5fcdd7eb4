import Foundation
import Hummingbird
import JobQCore

/// What an endpoint of the HTTP API reads of its request, once the request is let in: the
/// token it carried, its path parameters and query, and its body (already read, within the
/// endpoint's bound).
struct APIRequest: Sendable {
    let token: APIToken
    let parameters: [String: String]
    let query: [String: String]
    /// The body as text; empty for an endpoint that reads none.
    let body: String

    /// A job id from the path.
    func jobID(_ name: String = "id") throws -> JobID {
        guard let text = parameters[name], let id = JobID(text), id > 0 else {
            throw APIError.badRequest(
                "\(JSONText.preview(parameters[name] ?? "")) is not a job id: job ids are whole numbers from 1",
                field: name)
        }
        return id
    }

    /// A whole-number query parameter within `range`; `otherwise` when absent.
    func integer(_ name: String, in range: ClosedRange<Int>, otherwise: Int) throws -> Int {
        guard let text = query[name] else { return otherwise }
        guard let value = Int(text), range.contains(value) else {
            throw APIError.badRequest(
                "\(name) is a whole number from \(range.lowerBound) to \(range.upperBound), not \(JSONText.preview(text))",
                field: name)
        }
        return value
    }

    /// The body as a JSON object, its members by key: for the small bodies (a signal, an event).
    func object() throws -> [String: OrderedJSON] {
        let parsed = try JSONBody.parse(body)
        guard case .object(let members) = parsed else {
            throw APIError.badRequest("the body is a JSON object, like {\"name\": \"paid\", \"payload\": {}}")
        }
        var fields: [String: OrderedJSON] = [:]
        for member in members {
            guard fields[member.key] == nil else {
                throw APIError.badRequest("the key \(JSONText.preview(member.key)) is given twice", field: member.key)
            }
            fields[member.key] = member.value
        }
        return fields
    }
}

/// Bodies of the HTTP API as JSON, parsed only when they nest no deeper than ``maximumDepth``:
/// the parser recurses, and a body of a million `[` would otherwise exhaust the stack.
enum JSONBody {
    static let maximumDepth = 256

    static func parse(_ text: String) throws -> OrderedJSON {
        try checkDepth(text)
        do {
            return try OrderedJSON.parse(text)
        } catch {
            throw APIError.badRequest("the body is not valid JSON: \(error)")
        }
    }

    /// Refuses a body that nests deeper than ``maximumDepth``.
    static func checkDepth(_ text: String) throws {
        if let depth = JSONText.nestingDepth(of: text, exceeding: maximumDepth) {
            throw APIError.badRequest(
                "the body nests arrays and objects \(depth) levels deep or more; at most \(maximumDepth) are read")
        }
    }
}

extension OrderedJSON {
    /// The value of a string, or nil for anything else.
    var stringValue: String? {
        guard case .string(_, let value) = self else { return nil }
        return value
    }
}
