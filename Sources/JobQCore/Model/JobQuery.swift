/// Which jobs ``JobQueue/jobs(matching:)`` returns: newest first, filtered by any of queue,
/// state, executor and name and a ``JobFilter``, one page at a time.
///
/// ```swift
/// var query = JobQuery(state: .dead, executor: "mailer")
/// query.filter = try JobFilter(#"/customer = "acme""#)
/// let page = try await queue.jobs(matching: query)
/// query.before = page.last?.id   // the next (older) page
/// ```
public struct JobQuery: Sendable, Hashable {
    public var queue: String?
    public var state: JobState?
    public var executor: String?
    /// The job's name (``JobOptions/name``), matched exactly.
    public var name: String?
    /// Only jobs with smaller ids (older): the last id of the previous page.
    public var before: JobID?
    /// The most jobs returned, from 1 to 1000.
    public var limit: Int
    /// Further terms every job returned matches (the dashboard's search box).
    public var filter: JobFilter = .all

    public init(
        queue: String? = nil, state: JobState? = nil, executor: String? = nil, name: String? = nil,
        before: JobID? = nil,
        limit: Int = 50
    ) {
        self.queue = queue
        self.state = state
        self.executor = executor
        self.name = name
        self.before = before
        self.limit = limit
    }

    /// The fields as filter terms, then ``filter``'s.
    package var combinedFilter: JobFilter {
        var terms: [JobFilter.Term] = []
        func add(_ field: JobFilter.TextField, _ value: String?) {
            if let value { terms.append(JobFilter.Term(negated: false, condition: .textIn(field, [value]))) }
        }
        add(.queue, queue)
        add(.state, state?.rawValue)
        add(.executor, executor)
        add(.name, name)
        return JobFilter(expression: filter.expression, terms: terms + filter.terms)
    }
}

/// One page of a store's read of jobs: how many, from where, in which direction.
package struct JobPage: Sendable {
    package var limit: Int
    /// Only ids above this one.
    package var after: JobID?
    /// Only ids below this one.
    package var before: JobID?
    /// Only ids up to this one.
    package var through: JobID?
    /// Highest id first (the dashboard's order) instead of lowest.
    package var newestFirst: Bool

    package init(
        limit: Int, after: JobID? = nil, before: JobID? = nil, through: JobID? = nil, newestFirst: Bool = false
    ) {
        self.limit = limit
        self.after = after
        self.before = before
        self.through = through
        self.newestFirst = newestFirst
    }
}

/// How many jobs of one queue finished in each interval of a recent window
/// (``JobQueue/throughput(of:over:interval:)``).
public struct QueueThroughput: Sendable, Hashable {
    public var queue: String
    /// The window's intervals, oldest first: jobs that succeeded in each.
    public var succeeded: [Int]
    /// Jobs that died in each interval.
    public var dead: [Int]
    /// Jobs cancelled in each interval.
    public var cancelled: [Int]

    /// Every job that finished in the window.
    public var total: Int { succeeded.reduce(0, +) + dead.reduce(0, +) + cancelled.reduce(0, +) }

    package init(queue: String, succeeded: [Int], dead: [Int], cancelled: [Int]) {
        self.queue = queue
        self.succeeded = succeeded
        self.dead = dead
        self.cancelled = cancelled
    }
}
