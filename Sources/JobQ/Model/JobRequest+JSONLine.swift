import Foundation

extension JobRequest {
    /// The keys a job line may have.
    public static let jsonLineKeys: Set<String> = [
        "executor", "payload", "queue", "priority", "maxAttempts", "delay", "runAt", "timeout", "name", "batch",
    ]

    /// Parses one job written as a JSON object, the format of `jobq enqueue --file`:
    ///
    /// ```json
    /// {"executor": "sum", "payload": {"a": 1, "b": 2}, "queue": "default", "priority": 0,
    ///  "maxAttempts": 3, "delay": "30s", "timeout": "1m", "name": "nightly", "batch": "import"}
    /// ```
    ///
    /// Only `executor` is required; `runAt` (ISO 8601) may replace `delay`. Unknown keys and
    /// values of the wrong type are refused with an error that names them.
    ///
    /// ```swift
    /// let request = try JobRequest(jsonLine: #"{"executor": "sum", "payload": {"a": 1, "b": 2}}"#)
    /// ```
    public init(jsonLine line: String) throws(JobQueueError) {
        let value: JSONValue
        do {
            value = try JSONDecoder.jobq.decode(JSONValue.self, from: Data(line.utf8))
        } catch {
            throw .invalidInput("not valid JSON: \(JSONText.describe(error))")
        }
        guard case .object(let fields) = value else {
            throw .invalidInput("expected a JSON object like {\"executor\": \"sum\", \"payload\": {\"a\": 1, \"b\": 2}}")
        }
        if let unknown = fields.keys.sorted().first(where: { !Self.jsonLineKeys.contains($0) }) {
            throw .invalidInput("unknown key '\(unknown)'; known keys: \(Self.jsonLineKeys.sorted().joined(separator: ", "))")
        }
        guard case .string(let executor) = fields["executor"] else {
            throw .invalidInput("'executor' is missing or not a string")
        }
        let payloadData: Data
        do {
            payloadData = try JSONEncoder.jobq.encode(fields["payload"] ?? .object([:]))
        } catch {
            throw .invalidInput("'payload' cannot be encoded as JSON: \(error)")
        }
        var options = JobOptions()
        if let queue = fields["queue"] { options.queue = try Self.string(queue, key: "queue", example: "\"default\"") }
        if let priority = fields["priority"] { options.priority = try Self.integer(priority, key: "priority") }
        if let name = fields["name"] { options.name = try Self.string(name, key: "name", example: "\"nightly\"") }
        if let batch = fields["batch"] { options.batch = try Self.string(batch, key: "batch", example: "\"import\"") }
        if let attempts = fields["maxAttempts"] { options.maxAttempts = try Self.integer(attempts, key: "maxAttempts") }
        if fields["delay"] != nil, fields["runAt"] != nil { throw .invalidInput("give 'delay' or 'runAt', not both") }
        if let delay = fields["delay"] {
            let text = try Self.string(delay, key: "delay", example: "\"30s\"")
            options.runAt = Date().addingTimeInterval(try Self.duration(text, key: "delay").inSeconds)
        }
        if let runAt = fields["runAt"] {
            let text = try Self.string(runAt, key: "runAt", example: "\"2026-12-01T09:00:00Z\"")
            guard let date = ISO8601.parse(text) else {
                throw .invalidInput("'runAt' must be an ISO 8601 time like \"2026-12-01T09:00:00Z\", got \"\(text)\"")
            }
            options.runAt = date
        }
        if let timeout = fields["timeout"] {
            options.timeout = try Self.duration(try Self.string(timeout, key: "timeout", example: "\"30s\""), key: "timeout")
        }
        try self.init(executor: executor, encodedPayload: payloadData, options: options)
        try validate()
    }

    private static func string(_ value: JSONValue, key: String, example: String) throws(JobQueueError) -> String {
        guard case .string(let text) = value else { throw .invalidInput("'\(key)' must be a string like \(example)") }
        return text
    }

    private static func duration(_ text: String, key: String) throws(JobQueueError) -> Duration {
        do {
            return try DurationParser.parse(text)
        } catch {
            throw .invalidInput("'\(key)': \(error.description)")
        }
    }

    private static func integer(_ value: JSONValue, key: String) throws(JobQueueError) -> Int {
        switch value {
        case .integer(let number):
            if let int = Int(exactly: number) { return int }
        case .number(let number) where number == number.rounded() && abs(number) < 9.0e15:
            return Int(number)
        default:
            break
        }
        let text = (try? JSONEncoder.jobq.encode(value)).map { String(decoding: $0, as: UTF8.self) } ?? "?"
        throw .invalidInput("'\(key)' must be a whole number, got \(text)")
    }
}
