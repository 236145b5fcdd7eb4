import Foundation
import JobQ

/// Reads `jobq enqueue --file`: one JSON object per line. Blank lines are skipped. Every error
/// names its line, and nothing is enqueued unless every line is valid.
enum JobLinesFile {
    static let knownKeys: Set<String> = [
        "executor", "payload", "queue", "priority", "maxAttempts", "delay", "runAt", "timeout", "name", "batch",
    ]

    static func read(path: String, allowUnknownExecutors: Bool) throws -> [JobRequest] {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw CLIError.usage("--file: cannot read \(path): \((error as NSError).localizedDescription)")
        }
        guard let text = String(data: data, encoding: .utf8) else {
            throw CLIError.usage("--file: \(path) is not valid UTF-8 text")
        }
        var requests: [JobRequest] = []
        for (index, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let trimmed = line.trimmingCharacters(in: .whitespacesAndNewlines)
            if trimmed.isEmpty { continue }
            do {
                requests.append(try parse(trimmed, allowUnknownExecutors: allowUnknownExecutors))
            } catch let error as CLIError {
                throw CLIError.usage("\(path) line \(index + 1): \(error.message)")
            } catch let error as JobQueueError {
                throw CLIError.usage("\(path) line \(index + 1): \(error.description)")
            }
        }
        guard !requests.isEmpty else { throw CLIError.usage("--file: \(path) has no jobs") }
        return requests
    }

    static func parse(_ line: String, allowUnknownExecutors: Bool) throws -> JobRequest {
        let value: JSONValue
        do {
            value = try JSONDecoder().decode(JSONValue.self, from: Data(line.utf8))
        } catch {
            throw CLIError.usage("not valid JSON: \(JSONErrorText.describe(error))")
        }
        guard case .object(let fields) = value else {
            throw CLIError.usage("expected a JSON object like {\"executor\": \"sum\", \"payload\": {\"a\": 1, \"b\": 2}}")
        }
        if let unknown = fields.keys.sorted().first(where: { !knownKeys.contains($0) }) {
            throw CLIError.usage("unknown key '\(unknown)'; known keys: \(knownKeys.sorted().joined(separator: ", "))")
        }
        guard case .string(let executor) = fields["executor"] else {
            throw CLIError.usage("'executor' is missing or not a string")
        }
        try checkExecutorName(executor, allowUnknown: allowUnknownExecutors)
        let payloadData = try JSONEncoder().encode(fields["payload"] ?? .object([:]))
        var options = JobOptions()
        if let queue = fields["queue"] { options.queue = try string(queue, key: "queue", example: "\"default\"") }
        if let priority = fields["priority"] { options.priority = try integer(priority, key: "priority") }
        if let name = fields["name"] { options.name = try string(name, key: "name", example: "\"nightly\"") }
        if let batch = fields["batch"] { options.batch = try string(batch, key: "batch", example: "\"import\"") }
        if let attempts = fields["maxAttempts"] { options.maxAttempts = try integer(attempts, key: "maxAttempts") }
        if fields["delay"] != nil, fields["runAt"] != nil { throw CLIError.usage("give 'delay' or 'runAt', not both") }
        if let delay = fields["delay"] {
            let text = try string(delay, key: "delay", example: "\"30s\"")
            options.runAt = Date().addingTimeInterval(try parseDuration(text, option: "'delay'").inSeconds)
        }
        if let runAt = fields["runAt"] {
            let text = try string(runAt, key: "runAt", example: "\"2026-12-01T09:00:00Z\"")
            guard let date = parseISO8601(text) else {
                throw CLIError.usage("'runAt' must be an ISO 8601 time like \"2026-12-01T09:00:00Z\", got \"\(text)\"")
            }
            options.runAt = date
        }
        if let timeout = fields["timeout"] {
            options.timeout = try parseDuration(try string(timeout, key: "timeout", example: "\"30s\""), option: "'timeout'")
        }
        guard (1...1000).contains(options.maxAttempts) else {
            throw CLIError.usage("'maxAttempts' must be from 1 to 1000, got \(options.maxAttempts)")
        }
        if let timeout = options.timeout, timeout <= .zero { throw CLIError.usage("'timeout' must be longer than 0") }
        return try JobRequest(executor: executor, payloadJSON: String(decoding: payloadData, as: UTF8.self), options: options)
    }

    private static func string(_ value: JSONValue, key: String, example: String) throws -> String {
        guard case .string(let text) = value else { throw CLIError.usage("'\(key)' must be a string like \(example)") }
        return text
    }

    private static func integer(_ value: JSONValue, key: String) throws -> Int {
        switch value {
        case .integer(let number):
            guard let int = Int(exactly: number) else { break }
            return int
        case .number(let number) where number == number.rounded() && abs(number) < 9.0e15:
            return Int(number)
        default:
            break
        }
        throw CLIError.usage("'\(key)' must be a whole number, got \(String(decoding: (try? JSONEncoder().encode(value)) ?? Data(), as: UTF8.self))")
    }
}

enum JSONErrorText {
    static func describe(_ error: Error) -> String {
        let ns = error as NSError
        return (ns.userInfo["NSDebugDescription"] as? String) ?? ns.localizedDescription
    }
}
