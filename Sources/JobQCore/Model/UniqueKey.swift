import Foundation

/// Makes a job unique by a key: while a job with the same key holds it, enqueueing again returns
/// that job and stores nothing.
///
/// A job holds its key from the moment it is stored through every state before it finishes
/// (waiting, scheduled, ready, running, failed and awaiting a retry), so retries and snoozes
/// never collide with the job itself. Once it finishes it keeps holding the key if its final
/// state is one of ``finishedStates``, for ``period`` after it finished (for ever when `period`
/// is nil, until the job is pruned).
///
/// ```swift
/// // At most one report per customer waiting or running at a time:
/// try await queue.enqueue(Report.self, input, options: .init(unique: UniqueKey("report:\(customer)")))
/// // And no second one within an hour of the last one finishing, whatever its outcome:
/// try await queue.enqueue(Report.self, input, options: .init(unique: UniqueKey("report:\(customer)", for: .seconds(3600))))
/// ```
///
/// One rule settles the only possible collision, an operator's ``JobQueue/retry(_:)`` of a
/// finished job whose key has passed to a newer job: the retry is refused with an error that
/// names the newer job (cancel it, or let it finish, then retry).
public struct UniqueKey: Sendable, Hashable {
    /// The key, 1 to 200 bytes of UTF-8 without control characters. Jobs with different executors or queues share it if they
    /// share the key: put whatever should distinguish them into the key.
    public var key: String
    /// Finished states in which a job keeps holding its key (for ``period``).
    public var finishedStates: Set<JobState>
    /// How long after finishing a job in one of ``finishedStates`` holds its key; nil: for ever.
    public var period: Duration?
    /// What an enqueue does to the job that holds the key, if it has not started: nothing (the
    /// default), replace its payload, or debounce it. See ``UniqueConflict``.
    public var onConflict: UniqueConflict = .keep

    /// A key held while the job is unfinished, and, when `period` is given, for that long after
    /// it finishes in any of `finishedStates` (default: succeeded, dead or cancelled).
    public init(
        _ key: String, for period: Duration? = nil, finishedStates: Set<JobState>? = nil,
        onConflict: UniqueConflict = .keep
    ) {
        self.key = key
        self.period = period
        self.finishedStates = finishedStates ?? (period == nil ? [] : UniqueKey.finalStates)
        self.onConflict = onConflict
    }

    /// A key from the states a user lists (as `jobq enqueue --unique-states` does): unfinished
    /// states are always part of the set and may be listed; finished states keep the key.
    ///
    /// - Throws: ``JobQueueError/invalidInput(_:)`` for a period that could never apply.
    public init(_ key: String, for period: Duration?, states: Set<JobState>) throws(JobQueueError) {
        let finished = states.intersection(UniqueKey.finalStates)
        if period != nil, finished.isEmpty {
            throw .invalidInput(
                "a unique period only applies to finished jobs, but the unique states (\(states.map(\.rawValue).sorted().joined(separator: ",")))"
                    + " name no finished state; add succeeded, dead or cancelled, or drop the period")
        }
        self.init(key, for: period, finishedStates: finished)
    }

    static let finalStates: Set<JobState> = [.succeeded, .dead, .cancelled]

    /// The finished states as stored: a bit each.
    package var stateBits: Int {
        (finishedStates.contains(.succeeded) ? 1 : 0) | (finishedStates.contains(.dead) ? 2 : 0)
            | (finishedStates.contains(.cancelled) ? 4 : 0)
    }

    static func states(bits: Int) -> Set<JobState> {
        var states: Set<JobState> = []
        if bits & 1 != 0 { states.insert(.succeeded) }
        if bits & 2 != 0 { states.insert(.dead) }
        if bits & 4 != 0 { states.insert(.cancelled) }
        return states
    }

    package func validate() throws(JobQueueError) {
        try Label.check(key, what: "a unique key")
        if let period { try DurationParser.checkStorable(period, what: "a unique period") }
        try onConflict.validate()
    }

    /// Whether a job holding this rule still holds its key at `now`.
    package static func holds(state: JobState, finishedAt: Double?, bits: Int, period: Double?, now: Double) -> Bool {
        guard state.isFinal else { return true }
        guard states(bits: bits).contains(state) else { return false }
        guard let period, let finishedAt else { return true }
        return finishedAt + period > now
    }
}

/// What an enqueue whose unique key a job holds does to that job, when the job has not started
/// (it is waiting, scheduled or ready); a running or finished holder is always left as it is.
/// Decided under the unique key's write lock, so two enqueues never both change or both add.
///
/// ```swift
/// // Save a document at most once per quiet second, and at least every 30 seconds:
/// let key = UniqueKey("save:\(document)", onConflict: .debounce(quiet: .seconds(1), longest: .seconds(30)))
/// try await queue.enqueue(Save.self, input, options: .init(unique: key))
/// ```
public enum UniqueConflict: Sendable, Hashable {
    /// The holder stays as it is, and the enqueue returns it (the default).
    case keep
    /// The holder takes the new request's payload and priority; its run time stays.
    case replace
    /// The holder takes the new request's payload and priority, and its run time moves out to
    /// `quiet` from now, but never past `longest` after the holder was enqueued, so a steady
    /// stream of enqueues cannot put it off for ever.
    case debounce(quiet: Duration, longest: Duration)

    package func validate() throws(JobQueueError) {
        guard case .debounce(let quiet, let longest) = self else { return }
        guard quiet > .zero, longest >= quiet else {
            throw .invalidInput(
                "a debounce needs a quiet period above zero and a longest wait at least as long, got \(DurationParser.format(quiet)) "
                    + "and \(DurationParser.format(longest))")
        }
        try DurationParser.checkStorable(longest, what: "a debounce's longest wait")
    }
}
