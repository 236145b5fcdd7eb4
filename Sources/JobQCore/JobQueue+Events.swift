import Foundation

extension JobQueue {
    /// Follows the event feed: events committed after `cursor` (nil: from now on), oldest
    /// first, matching `filter`, without end until the consuming task is cancelled.
    ///
    /// Delivery is after commit, in one order that never changes, with no gap and no duplicate;
    /// resume after a restart (or in another process sharing the store) by passing the last
    /// `event.id` seen. On SQLite the order is commit order, and ids ascend. On PostgreSQL,
    /// where workers write side by side, it is the order of the writing transactions (ids
    /// ascend within a transaction, not always between them), and an event is delivered once
    /// every transaction that began before its own has ended.
    /// Commits in this process are seen at once; other processes' too where the OS reports
    /// writes to the store's file (inotify on Linux, kqueue on macOS), with `pollInterval` (at
    /// least 100ms then) as a safety net; elsewhere within `pollInterval`, a cheap check of the
    /// store's change counter, so a few milliseconds is fine.
    ///
    /// ```swift
    /// var cursor = savedCursor
    /// for try await event in queue.events(EventFilter(executor: "sum", kinds: [.succeeded]), since: cursor) {
    ///     print(try event.data(as: SucceededData.self))
    ///     cursor = event.id
    /// }
    /// ```
    public func events(
        _ filter: EventFilter = EventFilter(), since cursor: Int64? = nil, pollInterval: Duration = .milliseconds(50)
    ) -> AsyncThrowingStream<JobEvent, any Error> {
        let store = self.store
        return AsyncThrowingStream { continuation in
            let task = Task {
                let signal = WakeSignal()
                let observer = store.addCommitObserver { signal.poke() }
                defer { store.removeCommitObserver(observer) }
                // Other processes' commits: the watcher reports them (at once where the OS tells
                // of writes to the file, else within pollInterval), and events are read only then.
                let watcher = store.otherCommitsWatch(for: .events)
                let ticker = Task {
                    if let watcher {
                        await watcher.run(pollInterval: pollInterval, isBusy: { false }) { signal.poke() }
                    } else {
                        while !Task.isCancelled {
                            try? await Task.sleep(for: pollInterval)
                            signal.poke()
                        }
                    }
                }
                defer { ticker.cancel() }
                var wakeups = signal.stream.makeAsyncIterator()
                do {
                    var position: Int64
                    if let cursor { position = cursor } else { position = try await store.latestEventID() }
                    while !Task.isCancelled {
                        // The matches and the newest event come from one snapshot, so a selective
                        // filter does not rescan the same unmatched events each time.
                        while true {
                            let (newest, page) = try await store.eventsUpToNewest(
                                after: position, filter: filter, limit: 500)
                            for event in page { continuation.yield(event) }
                            guard page.count == 500, let last = page.last else {
                                position = newest
                                break
                            }
                            position = last.id
                        }
                        if await wakeups.next() == nil { break }
                    }
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    /// Events after `cursor` matching `filter`, oldest first, at most `limit`: one page of the
    /// feed, without waiting for more.
    public func events(after cursor: Int64, filter: EventFilter = EventFilter(), limit: Int = 1000) async throws
        -> [JobEvent]
    {
        guard limit >= 0 else { throw JobQueueError.invalidInput("limit must not be negative, got \(limit)") }
        return try await store.events(after: cursor, filter: filter, limit: limit)
    }

    /// The id of the newest event: pass it as `since` to follow only what happens next.
    public func latestEventID() async throws -> Int64 {
        try await store.latestEventID()
    }
}

/// Callbacks for one job, in the style of Elevate: called from the event feed, so they fire
/// whichever process runs the job.
///
/// ```swift
/// try await queue.enqueue(Resize.self, input, handlers: JobHandlers(
///     onStart: { _ in print("started") },
///     onUpdate: { update in print(update.fraction ?? 0) },
///     onFinish: { finish in print(finish.state, finish.error ?? "") }))
/// ```
public struct JobHandlers: Sendable {
    public var onStart: (@Sendable (JobEvent) -> Void)?
    public var onUpdate: (@Sendable (JobUpdate) -> Void)?
    /// Called once, when the job succeeds, dies or is cancelled.
    public var onFinish: (@Sendable (JobFinish) -> Void)?

    public init(
        onStart: (@Sendable (JobEvent) -> Void)? = nil,
        onUpdate: (@Sendable (JobUpdate) -> Void)? = nil,
        onFinish: (@Sendable (JobFinish) -> Void)? = nil
    ) {
        self.onStart = onStart
        self.onUpdate = onUpdate
        self.onFinish = onFinish
    }
}

/// A progress report, as ``JobHandlers/onUpdate`` receives it.
public struct JobUpdate: Sendable, Hashable, Decodable {
    public var fraction: Double?
    public var message: String?
    public var attempt: Int?
}

/// How a job ended, as ``JobHandlers/onFinish`` receives it.
public struct JobFinish: Sendable, Hashable {
    public var jobID: JobID
    /// `succeeded`, `dead` or `cancelled`.
    public var state: JobState
    public var resultJSON: String?
    public var error: String?

    public func result<T: Decodable>(as type: T.Type) throws -> T? {
        guard let resultJSON else { return nil }
        return try JSONDecoder().decode(T.self, from: Data(resultJSON.utf8))
    }
}

extension JobQueue {
    /// Enqueues a job and calls `handlers` as it starts, reports progress and finishes.
    @discardableResult
    public func enqueue<E: Executor>(
        _ executor: E.Type, _ input: E.Input, options: JobOptions = .init(), handlers: JobHandlers
    ) async throws -> Job {
        try await enqueue(try JobRequest(executor, input, options: options), handlers: handlers)
    }

    /// Enqueues a job and calls `handlers` as it starts, reports progress and finishes.
    @discardableResult
    public func enqueue(_ request: JobRequest, handlers: JobHandlers) async throws -> Job {
        let cursor = try await store.latestEventID()
        let job = try await enqueue(request)
        let feed = events(EventFilter(jobIDs: [job.id]), since: cursor)
        Task {
            for try await event in feed {
                switch event.kind {
                case .started:
                    handlers.onStart?(event)
                case .progress:
                    if let update = try? event.data(as: JobUpdate.self) { handlers.onUpdate?(update) }
                case .succeeded, .dead, .cancelled:
                    struct Details: Decodable { var error: String? }
                    let details = try? event.data(as: Details.self)
                    let resultJSON = event.kind == .succeeded ? try await store.job(job.id)?.resultJSON : nil
                    let state: JobState =
                        event.kind == .succeeded ? .succeeded : (event.kind == .dead ? .dead : .cancelled)
                    handlers.onFinish?(
                        JobFinish(jobID: job.id, state: state, resultJSON: resultJSON, error: details?.error))
                    return
                default:
                    break
                }
            }
        }
        return job
    }
}
