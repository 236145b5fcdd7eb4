import Foundation

/// What a store's workers did over a window, bucket by bucket: attempts ended by outcome, how
/// long jobs waited to start and ran, and the backlog. Read with ``JobQueue/history(over:buckets:queue:executor:)``;
/// the dashboard draws it, `jobq stats` prints it.
///
/// ```swift
/// let lastHour = try await queue.history(over: .seconds(3600))
/// for bucket in lastHour.buckets { print(bucket.start, bucket.succeeded, bucket.waitP95 ?? 0) }
/// ```
///
/// Each worker adds what it ran about every 10 seconds (a worker killed with SIGKILL loses its
/// last seconds of counts; its jobs lose nothing); one worker of the store samples the backlog
/// once a minute. Times are percentiles of histograms, within about 19%.
public struct History: Sendable, Hashable {
    public struct Bucket: Sendable, Hashable {
        public var start: Date
        /// Attempts that ended so, by the workers.
        public var succeeded = 0
        public var retried = 0
        public var dead = 0
        /// Jobs cancelled (by an operator, or expired before they started), from the jobs kept.
        public var cancelled = 0
        /// How long jobs waited from their run time to their attempt's start, in seconds.
        public var waitP50: Double?
        public var waitP95: Double?
        public var waitMax: Double?
        /// How long attempts ran, in seconds.
        public var runP50: Double?
        public var runP95: Double?
        public var runMax: Double?
        /// Unfinished jobs by state (`waiting`, `scheduled`, `ready`, `running`) at the bucket's
        /// last sample; empty when none was taken in it.
        public var backlog: [JobState: Int] = [:]

        package init(start: Date) { self.start = start }

        /// Attempts and cancellations that ended in the bucket.
        public var finished: Int { succeeded + retried + dead + cancelled }
    }

    public var start: Date
    public var bucketSeconds: Double
    public var buckets: [Bucket]
    /// The queue and executor the history is of (nil: all).
    public var queue: String?
    public var executor: String?

    package init(start: Date, bucketSeconds: Double, buckets: [Bucket], queue: String?, executor: String?) {
        self.start = start
        self.bucketSeconds = bucketSeconds
        self.buckets = buckets
        self.queue = queue
        self.executor = executor
    }

    /// The history as JSON: `start`, `bucketSeconds`, `queue`, `executor`, and `buckets`, each
    /// with `start`, `succeeded`, `retried`, `dead`, `cancelled`, `waitP50`, `waitP95`,
    /// `waitMax`, `runP50`, `runP95`, `runMax` (seconds or null) and `backlog` (by state).
    public var json: String {
        var object = JSONObjectBuilder()
        object.add("start", date: start)
        object.add("bucketSeconds", number: bucketSeconds)
        object.add("queue", raw: queue.map(JSONText.string) ?? "null")
        object.add("executor", raw: executor.map(JSONText.string) ?? "null")
        let buckets = self.buckets.map { bucket -> String in
            var item = JSONObjectBuilder()
            item.add("start", date: bucket.start)
            for (key, value) in [
                ("succeeded", bucket.succeeded), ("retried", bucket.retried), ("dead", bucket.dead),
                ("cancelled", bucket.cancelled)
            ] {
                item.add(key, int: value)
            }
            for (key, value) in [
                ("waitP50", bucket.waitP50), ("waitP95", bucket.waitP95), ("waitMax", bucket.waitMax),
                ("runP50", bucket.runP50), ("runP95", bucket.runP95), ("runMax", bucket.runMax)
            ] {
                item.add(key, raw: value.map(JSONText.number) ?? "null")
            }
            var backlog = JSONObjectBuilder()
            for state in History.backlogStates { backlog.add(state.rawValue, int: bucket.backlog[state] ?? 0) }
            item.add("backlog", raw: backlog.text)
            return item.text
        }
        object.add("buckets", raw: "[" + buckets.joined(separator: ",") + "]")
        return object.text
    }

    /// The states a backlog sample counts, in the order a cumulative flow stacks them.
    public static let backlogStates: [JobState] = [.running, .ready, .scheduled, .waiting]
}

/// One minute of one queue and executor as a worker adds it to the history.
package struct HistoryMinute: Sendable, Hashable {
    package var minute: Int64
    package var queue: String
    package var executor: String
    package var succeeded = 0
    package var retried = 0
    package var dead = 0
    package var waits = LatencyHistogram()
    package var runs = LatencyHistogram()
    package var waitMax = 0.0
    package var runMax = 0.0

    package init(minute: Int64, queue: String, executor: String) {
        self.minute = minute
        self.queue = queue
        self.executor = executor
    }

    /// Adds `other`'s counts (the same minute, queue and executor).
    package mutating func merge(_ other: HistoryMinute) {
        succeeded += other.succeeded
        retried += other.retried
        dead += other.dead
        waits.merge(other.waits)
        runs.merge(other.runs)
        waitMax = max(waitMax, other.waitMax)
        runMax = max(runMax, other.runMax)
    }
}
