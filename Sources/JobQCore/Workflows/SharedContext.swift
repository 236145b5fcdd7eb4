import Foundation
import Synchronization

/// One write to a workflow's shared context: a key and its value as JSON text.
package struct SharedWrite: Sendable, Hashable {
    package let key: String
    package let json: String

    package static func validate(_ key: String) throws(JobQueueError) {
        guard !key.isEmpty, key.count <= 200, !key.contains("\""),
            !key.unicodeScalars.contains(where: { $0.value < 0x20 })
        else {
            throw .invalidInput(
                "a shared context key must be 1 to 200 characters without double quotes or control characters, got '\(JSONText.preview(key))'"
            )
        }
    }
}

/// The writes an attempt made with ``JobContext/setShared(_:_:)``, kept until its success is
/// recorded (and dropped with a failed attempt). The last write of a key wins.
final class SharedWrites: Sendable {
    private let writes = Mutex<[SharedWrite]>([])

    func set(_ key: String, json: String) {
        writes.withLock { writes in
            writes.removeAll { $0.key == key }
            writes.append(SharedWrite(key: key, json: json))
        }
    }

    var all: [SharedWrite] { writes.withLock { $0 } }
}

extension JobContext {
    /// The workflow's shared context as it was when this attempt started, with this attempt's
    /// own writes on top. Empty outside a workflow.
    ///
    /// ```swift
    /// let region = context.shared["region"]   // JSONValue?, e.g. .string("eu")
    /// ```
    public var shared: [String: JSONValue] {
        var values: [String: JSONValue] = [:]
        if let sharedJSON,
            case .object(let object)? = try? JSONDecoder.jobq.decode(JSONValue.self, from: Data(sharedJSON.utf8))
        {
            values = object
        }
        for write in sharedWrites?.all ?? [] {
            values[write.key] = try? JSONDecoder.jobq.decode(JSONValue.self, from: Data(write.json.utf8))
        }
        return values
    }

    /// Decodes one key of the shared context, or returns nil when it is absent.
    ///
    /// ```swift
    /// let token = try context.shared("token", as: String.self)
    /// ```
    public func shared<T: Decodable>(_ key: String, as type: T.Type) throws -> T? {
        guard let value = shared[key] else { return nil }
        return try JSONDecoder.jobq.decode(T.self, from: Data(value.jsonText.utf8))
    }

    /// Writes a key of the workflow's shared context. The write is committed with the job's
    /// success (never from a failed attempt); members that start later see it. Members writing
    /// different keys never lose each other's writes; for the same key the last committed wins.
    ///
    /// ```swift
    /// try context.setShared("token", session.token)
    /// ```
    ///
    /// - Throws: ``JobQueueError/invalidState(_:)`` outside a workflow;
    ///   ``JobQueueError/invalidInput(_:)`` for a key with a double quote or a value that does
    ///   not encode as JSON.
    public func setShared<T: Encodable & Sendable>(_ key: String, _ value: T) throws {
        guard workflowID != nil, let sharedWrites else {
            throw JobQueueError.invalidState(
                "job \(jobID) is not a workflow step, so it has no shared context to write")
        }
        try SharedWrite.validate(key)
        let data: Data
        do {
            data = try JSONEncoder.jobq.encode(value)
        } catch {
            throw JobQueueError.invalidInput("the value for shared key '\(key)' cannot be encoded as JSON: \(error)")
        }
        let json = String(decoding: data, as: UTF8.self)
        try StoredText.checkJSON(json, what: "the value for shared key '\(key)'")
        sharedWrites.set(key, json: json)
    }

    /// Dependencies that died or were cancelled and that this job ignored or runs despite
    /// (``DependencyPolicy/ignore``, ``DependencyPolicy/run``, a lane that continues, a group
    /// that continues).
    public var failedDependencies: [FailedDependency] {
        guard let failedDependenciesJSON else { return [] }
        return (try? JSONDecoder.jobq.decode([FailedDependency].self, from: Data(failedDependenciesJSON.utf8))) ?? []
    }
}
