import Foundation

extension JobRequest {
    /// The keys a job line may have.
    public static let jsonLineKeys: Set<String> = stepKeys.union([
        "after", "onDependencyFailure", "lane", "laneOnFailure", "unique", "partition", "expireAfter"
    ])

    /// The keys of a job that a workflow step may have too.
    static let stepKeys: Set<String> = [
        "executor", "payload", "queue", "priority", "maxAttempts", "delay", "runAt", "timeout", "name", "batch"
    ]

    /// Parses one job written as a JSON object, the format of `jobq enqueue --file`:
    ///
    /// ```json
    /// {"executor": "sum", "payload": {"a": 1, "b": 2}, "queue": "default", "priority": 0,
    ///  "maxAttempts": 3, "delay": "30s", "timeout": "1m", "name": "nightly", "batch": "import"}
    /// ```
    ///
    /// Only `executor` is required; `runAt` (ISO 8601) may replace `delay`. `after` lists the ids
    /// the job waits for, each a number or `{"id": 12, "policy": "ignore"}`;
    /// `onDependencyFailure` is `cancel`, `fail`, `ignore` or `run`; `lane` appends the job to a
    /// lane (`laneOnFailure`: `continue` or `halt`); `unique` is a key (`"report:42"`) or
    /// `{"key": "report:42", "for": "1h", "states": ["succeeded"]}` (see ``UniqueKey``);
    /// `expireAfter` (`"10m"`) gives the job up if no attempt started that long after its run
    /// time (``JobOptions/expiresAt``). Unknown keys and values of the wrong type are refused
    /// with an error that names them.
    ///
    /// ```swift
    /// let request = try JobRequest(jsonLine: #"{"executor": "sum", "payload": {"a": 1, "b": 2}}"#)
    /// ```
    public init(jsonLine line: String) throws(JobQueueError) {
        if let fields = Self.plainObject(line) {
            try self.init(fields: fields, keys: Self.jsonLineKeys)
            return
        }
        let value: JSONValue
        do {
            value = try JSONDecoder.jobq.decode(JSONValue.self, from: Data(line.utf8))
        } catch {
            throw .invalidInput("not valid JSON: \(JSONText.describe(error))")
        }
        guard case .object(let fields) = value else {
            throw .invalidInput(
                "expected a JSON object like {\"executor\": \"sum\", \"payload\": {\"a\": 1, \"b\": 2}}")
        }
        try self.init(fields: fields, keys: Self.jsonLineKeys)
    }

    /// The fields of a plain job line, read by jobq's own parser: an object whose strings have
    /// no escapes or control characters, whose numbers are whole and fit 64 bits, with no key
    /// twice and at most 64 levels deep — what a file of jobs nearly always holds. Foundation's
    /// decoder costs a thrown error for every number of a `JSONValue` (it tries a string and an
    /// object first), which made reading the lines most of `jobq enqueue --file`. For such a
    /// line both give the same fields; any other line (and any invalid one) is nil here and
    /// goes to Foundation's decoder, which reads it, or says what is wrong, as before.
    static func plainObject(_ line: String) -> [String: JSONValue]? {
        var depth = 0
        var inString = false
        for byte in line.utf8 {
            if inString {
                if byte == UInt8(ascii: "\\") || byte < 0x20 { return nil }
                if byte == UInt8(ascii: "\"") { inString = false }
                continue
            }
            switch byte {
            case UInt8(ascii: "\""): inString = true
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                depth += 1
                if depth > 64 { return nil }
            case UInt8(ascii: "}"), UInt8(ascii: "]"): depth -= 1
            default: break
            }
        }
        guard let parsed = try? OrderedJSON.parse(line), case .object = parsed,
            case .object(let fields)? = plainValue(parsed)
        else { return nil }
        return fields
    }

    /// `value` as a `JSONValue`, or nil when it is not plain (``plainObject(_:)``).
    private static func plainValue(_ value: OrderedJSON) -> JSONValue? {
        switch value {
        case .null: return .null
        case .bool(let flag): return .bool(flag)
        case .string(_, let text): return .string(text)
        case .number(let text):
            // -?(0|[1-9][0-9]*), which Int64 reads exactly; fractions and exponents go to Foundation.
            let digits = text.utf8.first == UInt8(ascii: "-") ? text.utf8.dropFirst() : text.utf8.dropFirst(0)
            guard !digits.isEmpty, digits.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }),
                digits.first != UInt8(ascii: "0") || digits.count == 1, let integer = Int64(text)
            else { return nil }
            return .integer(integer)
        case .array(let elements):
            var values: [JSONValue] = []
            values.reserveCapacity(elements.count)
            for element in elements {
                guard let plain = plainValue(element) else { return nil }
                values.append(plain)
            }
            return .array(values)
        case .object(let members):
            var fields: [String: JSONValue] = [:]
            fields.reserveCapacity(members.count)
            for member in members {
                guard fields[member.key] == nil, let plain = plainValue(member.value) else { return nil }
                fields[member.key] = plain
            }
            return .object(fields)
        }
    }

    /// A job from the fields of a JSON object, refusing keys outside `keys`.
    init(fields: [String: JSONValue], keys: Set<String>) throws(JobQueueError) {
        if let unknown = fields.keys.sorted().first(where: { !keys.contains($0) }) {
            throw .invalidInput("unknown key '\(unknown)'; known keys: \(keys.sorted().joined(separator: ", "))")
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
            options.timeout = try Self.duration(
                try Self.string(timeout, key: "timeout", example: "\"30s\""), key: "timeout")
        }
        if let policy = fields["onDependencyFailure"] {
            options.onDependencyFailure = try DependencyPolicy(
                parsing: try Self.string(policy, key: "onDependencyFailure", example: "\"ignore\""))
        }
        if let after = fields["after"] {
            guard case .array(let items) = after else {
                throw .invalidInput(
                    "'after' must be an array of job ids like [12, {\"id\": 13, \"policy\": \"ignore\"}]")
            }
            for item in items {
                if case .object(let edge) = item {
                    guard let id = edge["id"], Set(edge.keys).isSubset(of: ["id", "policy"]) else {
                        throw .invalidInput(
                            "each object in 'after' has an 'id' and optionally a 'policy', like {\"id\": 13, \"policy\": \"ignore\"}"
                        )
                    }
                    let jobID = JobID(try Self.integer(id, key: "after[].id"))
                    options.after.append(jobID)
                    if let policy = edge["policy"] {
                        options.dependencyPolicies[jobID] = try DependencyPolicy(
                            parsing: try Self.string(policy, key: "after[].policy", example: "\"ignore\""))
                    }
                } else {
                    options.after.append(JobID(try Self.integer(item, key: "after[]")))
                }
            }
        }
        if let lane = fields["lane"] { options.lane = try Self.string(lane, key: "lane", example: "\"imports\"") }
        if let policy = fields["laneOnFailure"] {
            options.laneOnFailure = try LaneFailurePolicy(
                parsing: try Self.string(policy, key: "laneOnFailure", example: "\"halt\""))
        }
        if let unique = fields["unique"] { options.unique = try Self.uniqueKey(unique) }
        if let partition = fields["partition"] {
            options.partition = try Self.string(partition, key: "partition", example: "\"customer-42\"")
        }
        if let window = fields["expireAfter"] {
            let text = try Self.string(window, key: "expireAfter", example: "\"10m\"")
            let duration = try Self.duration(text, key: "expireAfter")
            guard duration > .zero else { throw .invalidInput("'expireAfter' must be longer than 0, e.g. \"10m\"") }
            options.expiresAt = (options.runAt ?? Date()).addingTimeInterval(duration.inSeconds)
        }
        try self.init(executor: executor, encodedPayload: payloadData, options: options)
        try validate()
    }

    private static func uniqueKey(_ value: JSONValue) throws(JobQueueError) -> UniqueKey {
        let example = "\"report:42\" or {\"key\": \"report:42\", \"for\": \"1h\", \"states\": [\"succeeded\"]}"
        if case .string(let key) = value { return UniqueKey(key) }
        guard case .object(let fields) = value, let key = fields["key"],
            Set(fields.keys).isSubset(of: ["key", "for", "states"])
        else {
            throw .invalidInput(
                "'unique' must be a key or an object with 'key' and optionally 'for' and 'states', like \(example)")
        }
        let text = try string(key, key: "unique.key", example: "\"report:42\"")
        let period = try fields["for"].map { value throws(JobQueueError) in
            try duration(try string(value, key: "unique.for", example: "\"1h\""), key: "unique.for")
        }
        guard let listed = fields["states"] else { return UniqueKey(text, for: period) }
        guard case .array(let items) = listed else {
            throw .invalidInput("'unique.states' must be an array of states like [\"succeeded\"]")
        }
        var states: Set<JobState> = []
        for item in items {
            states.insert(try JobState(parsing: try string(item, key: "unique.states[]", example: "\"succeeded\"")))
        }
        return try UniqueKey(text, for: period, states: states)
    }

    static func string(_ value: JSONValue, key: String, example: String) throws(JobQueueError) -> String {
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
