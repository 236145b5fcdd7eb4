/// What a queue allows across every worker and machine (``JobQueue/setLimits(_:for:)``).
///
/// ```swift
/// try await queue.setLimits(QueueLimits(concurrency: 3), for: "licensed-tool")
/// try await queue.setLimits(
///     QueueLimits(concurrency: 2, rate: RateLimit(100, per: .seconds(60)), partitionBy: .payload("/customer")),
///     for: "emails")
/// ```
public struct QueueLimits: Sendable, Hashable, Codable {
    /// At most this many of the queue's jobs (of each partition, when partitioned) running at
    /// once; nil for no limit.
    public var concurrency: Int?
    /// At most this many starts (of each partition, when partitioned) in any span of the rate's
    /// period; nil for no limit.
    public var rate: RateLimit?
    /// Splits the limits by partition: each partition gets the whole of them. nil: one set of
    /// limits for the whole queue.
    public var partitionBy: QueuePartitioning?

    public init(concurrency: Int? = nil, rate: RateLimit? = nil, partitionBy: QueuePartitioning? = nil) {
        self.concurrency = concurrency
        self.rate = rate
        self.partitionBy = partitionBy
    }

    /// Whether any limit is set (partitioning alone limits nothing).
    public var limitsAnything: Bool { concurrency != nil || rate != nil }
}

/// At most ``starts`` job starts in any span of ``period``: a sliding window, so a burst at the
/// end of one minute is followed by no burst at the start of the next.
///
/// ```swift
/// let hundredAMinute = RateLimit(100, per: .seconds(60))
/// ```
public struct RateLimit: Sendable, Hashable, Codable, CustomStringConvertible {
    public var starts: Int
    public var period: Duration

    public init(_ starts: Int, per period: Duration) {
        self.starts = starts
        self.period = period
    }

    private enum CodingKeys: String, CodingKey {
        case starts
        case periodSeconds
    }

    /// Encoded as `{"starts": 100, "periodSeconds": 60}`.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(starts, forKey: .starts)
        try container.encode(period.inSeconds, forKey: .periodSeconds)
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let seconds = try container.decode(Double.self, forKey: .periodSeconds)
        self.init(try container.decode(Int.self, forKey: .starts), per: Duration(storedSeconds: seconds))
    }

    /// `100/1m`, the form `jobq queue limit --rate` takes.
    public var description: String { "\(starts)/\(DurationParser.format(period))" }

    /// Reads `STARTS/PERIOD`, e.g. `100/1m`, `20/1s`, `5000/1h` (periods as ``DurationParser``
    /// reads them).
    /// - Throws: ``JobQueueError/invalidInput(_:)`` saying what is wrong and what a valid form is.
    public init(parsing text: String) throws(JobQueueError) {
        let parts = text.split(separator: "/", maxSplits: 1).map(String.init)
        guard parts.count == 2, let starts = Int(parts[0]) else {
            throw .invalidInput(
                "'\(JSONText.preview(text))' is not a rate: give starts per period, e.g. 100/1m, 20/1s or 5000/1h")
        }
        self.init(starts, per: try DurationParser.parse(parts[1]))
        try check()
    }

    /// The longest period a rate may have: one day. A rate counts the starts of its whole
    /// period at every claim, so a longer one would be a quota, not a rate.
    public static let maximumPeriod: Duration = .seconds(86_400)

    /// Throws unless the rate can start jobs: 1 or more starts per period of 1ms to a day.
    func check() throws(JobQueueError) {
        guard starts >= 1 else {
            throw .invalidInput(
                "a rate of \(starts) starts per period would run nothing: give 1 or more, e.g. 100/1m")
        }
        guard period >= .milliseconds(1), period <= Self.maximumPeriod else {
            throw .invalidInput(
                "a rate's period must be from 1ms to 1d, got \(DurationParser.format(period)); e.g. 100/1m")
        }
    }
}

/// How a queue's limits are split into partitions.
///
/// ```swift
/// .payload("/customer")   // by the payload's `customer` member
/// .jobPartition           // by JobOptions.partition, given at enqueue
/// ```
public enum QueuePartitioning: Sendable, Hashable, Codable, CustomStringConvertible {
    /// By the value of a payload member, named by a JSON pointer such as `/customer` or
    /// `/account/id` (object members only; values compare as text, so `7` and `"7"` are one
    /// partition). A job given its own ``JobOptions/partition`` is in that partition instead.
    case payload(String)
    /// By ``JobOptions/partition`` alone.
    case jobPartition

    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        do {
            self = try QueuePartitioning(parsing: text)
        } catch {
            throw DecodingError.dataCorrupted(
                .init(codingPath: decoder.codingPath, debugDescription: error.description))
        }
    }

    /// Encoded as ``description``: `"/customer"` or `"job"`.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }

    /// `/customer` or `job`: the form `jobq queue limit --partition-by` takes and the store keeps.
    public var description: String {
        switch self {
        case .payload(let pointer): pointer
        case .jobPartition: "job"
        }
    }

    /// Reads the form ``description`` writes.
    /// - Throws: ``JobQueueError/invalidInput(_:)`` saying what a valid form is.
    public init(parsing text: String) throws(JobQueueError) {
        if text == "job" {
            self = .jobPartition
            return
        }
        _ = try PayloadPointer(text)
        self = .payload(text)
    }
}

/// A JSON pointer to a payload member (RFC 6901, object members only), checked.
package struct PayloadPointer: Sendable, Hashable {
    /// The member names from the outside in, unescaped.
    package let names: [String]

    package init(_ pointer: String) throws(JobQueueError) {
        guard pointer.hasPrefix("/"), pointer.count > 1 else {
            throw .invalidInput(
                "'\(JSONText.preview(pointer))' is not a payload member: give a JSON pointer such as /customer or "
                    + "/account/id, or `job` to partition by the partition given at enqueue")
        }
        var names: [String] = []
        for segment in pointer.dropFirst().split(separator: "/", omittingEmptySubsequences: false) {
            // RFC 6901: `~` only as `~0` (a tilde) or `~1` (a slash).
            var rest = segment[...]
            while let tilde = rest.firstIndex(of: "~") {
                let next = rest.index(after: tilde)
                guard next < rest.endIndex, rest[next] == "0" || rest[next] == "1" else {
                    throw .invalidInput(
                        "the JSON pointer \(JSONText.preview(pointer)) has a '~' that is not '~0' or '~1'; "
                            + "write a tilde in a member's name as ~0 and a slash as ~1")
                }
                rest = rest[rest.index(after: next)...]
            }
            let name = segment.replacingOccurrences(of: "~1", with: "/").replacingOccurrences(of: "~0", with: "~")
            guard !name.isEmpty, !name.contains("\""), !name.contains("\\"),
                !name.unicodeScalars.contains(where: { $0.value < 0x20 })
            else {
                throw .invalidInput(
                    "the JSON pointer \(JSONText.preview(pointer)) names an empty member or one with a quote, backslash "
                        + "or control character; name object members such as /customer")
            }
            guard !Self.readsAsIndex(name) else {
                throw .invalidInput(
                    "the JSON pointer \(JSONText.preview(pointer)) has the segment '\(name)', which reads as an array "
                        + "index; payload members are named by object members such as /customer")
            }
            names.append(name)
        }
        self.names = names
    }

    /// Whether a store would read `name` as an array's index when the value there is an array:
    /// digits, and also (PostgreSQL, by `strtol`) digits after spaces or a sign (`+0`, `-1`,
    /// ` 1`). Such a segment is refused rather than read as a member on one store and an index
    /// on the other.
    static func readsAsIndex(_ name: String) -> Bool {
        var rest = name.utf8.drop { $0 == UInt8(ascii: " ") }[...]
        if let first = rest.first, first == UInt8(ascii: "+") || first == UInt8(ascii: "-") { rest = rest.dropFirst() }
        return !rest.isEmpty && rest.allSatisfy { (48...57).contains($0) }
    }
}

extension QueueLimits {
    /// One line for tables: `3 at once, 100/1m per /customer`, or `none`.
    public var summary: String {
        var parts: [String] = []
        if let concurrency { parts.append("\(concurrency) at once") }
        if let rate { parts.append(rate.description) }
        guard !parts.isEmpty else { return "none" }
        let partitioned = partitionBy.map { " per \($0 == .jobPartition ? "job partition" : $0.description)" } ?? ""
        return parts.joined(separator: ", ") + partitioned
    }
}

/// What a queue's limits hold back now (``JobQueue/limitUsage(of:partitions:)``), for the whole queue and
/// for its busiest partitions.
public struct QueueLimitUsage: Sendable, Hashable, Codable {
    public var limits: QueueLimits
    /// The queue's running jobs (claimed ahead into a worker's buffer included).
    public var running: Int
    /// Its ready jobs.
    public var ready: Int
    /// Ready jobs that no place is free for now: they wait for a running job to finish or for
    /// the rate's window to move on.
    public var waitingForCapacity: Int
    /// Starts within the rate's window ending now; nil without a rate.
    public var startsInWindow: Int?
    /// Partitions with jobs running, ready or started in the rate's window (0 when not
    /// partitioned).
    public var partitionCount: Int
    /// The busiest of them: most waiting for capacity, then most running, then by key.
    public var busiestPartitions: [PartitionUsage]

    package init(
        limits: QueueLimits, running: Int, ready: Int, waitingForCapacity: Int, startsInWindow: Int? = nil,
        partitionCount: Int, busiestPartitions: [PartitionUsage]
    ) {
        self.limits = limits
        self.running = running
        self.ready = ready
        self.waitingForCapacity = waitingForCapacity
        self.startsInWindow = startsInWindow
        self.partitionCount = partitionCount
        self.busiestPartitions = busiestPartitions
    }
}

/// One partition of a partitioned queue in a ``QueueLimitUsage``.
public struct PartitionUsage: Sendable, Hashable, Codable {
    /// The partition's value; empty for jobs with neither a partition nor the payload member.
    public var partition: String
    public var running: Int
    public var ready: Int
    public var waitingForCapacity: Int
    public var startsInWindow: Int?

    package init(partition: String, running: Int, ready: Int, waitingForCapacity: Int, startsInWindow: Int? = nil) {
        self.partition = partition
        self.running = running
        self.ready = ready
        self.waitingForCapacity = waitingForCapacity
        self.startsInWindow = startsInWindow
    }
}
