import Synchronization

/// Coalesces the outcomes of many attempts, and the starts of the attempts that follow them,
/// into one write transaction.
///
/// Submitting an outcome does not wait. The first item to arrive starts a flush, so nothing
/// waits on a timer; items that arrive while a transaction is being written join the next one.
/// Under load that makes one transaction per batch of finished jobs instead of one per job.
/// After each transaction the handler learns, per outcome, whether the fence accepted it.
///
/// A start does wait: an attempt runs only once its start is committed, so that a job which
/// crashes its worker has used an attempt (a poison job ends `dead`), while a job that only sat
/// in a dead worker's buffer keeps its attempts. A slot's next start usually rides in the same
/// transaction as its last outcome.
final class CompletionBatcher: Sendable {
    struct Item: Sendable {
        let job: ClaimedJob
        let outcome: AttemptOutcome
        let race: AttemptRace
    }

    /// What one transaction did: the items, and the ids the fence refused (or the error that
    /// rolled the transaction back).
    typealias Handler = @Sendable (_ items: [Item], _ refused: Result<Set<JobID>, any Error>) -> Void

    private struct State {
        var pending: [Item] = []
        var starts: [(job: ClaimedJob, done: CheckedContinuation<StartResult, Never>)] = []
        var flushing = false
        var idleWaiters: [CheckedContinuation<Void, Never>] = []
    }

    private let store: SQLiteStore
    private let workerID: String
    private let state = Mutex(State())
    private let handler = Mutex<Handler?>(nil)

    init(store: SQLiteStore, workerID: String) {
        self.store = store
        self.workerID = workerID
    }

    /// Sets what runs after each transaction (the pool sets it before it claims anything).
    func onRecorded(_ handler: @escaping Handler) {
        self.handler.withLock { $0 = handler }
    }

    /// Queues one outcome for the next transaction. `moreComing` says other jobs are about to
    /// finish, so a new flush lets them join; otherwise it writes at once.
    func submit(_ item: Item, moreComing: Bool = true) {
        let startFlush = state.withLock { state in
            state.pending.append(item)
            defer { state.flushing = true }
            return !state.flushing
        }
        if startFlush {
            // Unstructured on purpose: a flush must finish even if the submitting task is
            // cancelled (a worker shutting down still records its released jobs).
            startImmediately { await self.flush(gathering: moreComing) }
        }
    }

    /// How recording a start went.
    enum StartResult: Sendable {
        /// Committed: the attempt may run.
        case started
        /// The fence refused it: the job was cancelled or taken over; do not run it.
        case refused
        /// The transaction failed: the job is still claimed but not started.
        case failed(any Error)
    }

    /// Records that `job`'s attempt starts, in the next transaction, and returns once it is
    /// committed (or refused).
    func start(_ job: ClaimedJob) async -> StartResult {
        await withCheckedContinuation { continuation in
            let startFlush = state.withLock { state in
                state.starts.append((job, continuation))
                defer { state.flushing = true }
                return !state.flushing
            }
            if startFlush {
                startImmediately { await self.flush(gathering: true) }
            }
        }
    }

    /// Returns once every submitted outcome has been written (or has failed to be).
    func waitUntilIdle() async {
        await withCheckedContinuation { continuation in
            let idle = state.withLock { state in
                if !state.flushing && state.pending.isEmpty { return true }
                state.idleWaiters.append(continuation)
                return false
            }
            if idle { continuation.resume() }
        }
    }

    private func flush(gathering: Bool) async {
        // Let the jobs that are finishing at this moment add their outcomes first: a few
        // yields cost microseconds and turn one transaction per job into one per batch. A lone
        // job (an idle pool's) does not wait for company.
        if gathering {
            for _ in 0..<3 { await Task.yield() }
        }
        while true {
            let (batch, starts, waiters) = state.withLock { state in
                let batch = state.pending
                let starts = state.starts
                state.pending = []
                state.starts = []
                guard batch.isEmpty, starts.isEmpty else { return (batch, starts, [CheckedContinuation<Void, Never>]()) }
                state.flushing = false
                defer { state.idleWaiters = [] }
                return (batch, starts, state.idleWaiters)
            }
            if batch.isEmpty, starts.isEmpty {
                for waiter in waiters { waiter.resume() }
                return
            }
            let result: Result<Set<JobID>, any Error>
            do {
                let refused = try await store.complete(batch.map { ($0.job, $0.outcome) }, starting: starts.map(\.job), workerID: workerID)
                result = .success(refused.outcomes)
                for start in starts { start.done.resume(returning: refused.starts.contains(start.job.id) ? .refused : .started) }
            } catch {
                result = .failure(error)
                for start in starts { start.done.resume(returning: .failed(error)) }
            }
            if !batch.isEmpty { handler.withLock { $0 }?(batch, result) }
        }
    }
}
