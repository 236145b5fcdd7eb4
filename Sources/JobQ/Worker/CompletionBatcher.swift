import Synchronization

/// Coalesces the outcomes of many attempts into one write transaction.
///
/// Submitting does not wait: a slot hands over its outcome and starts its next job at once.
/// The first outcome to arrive starts a flush, so nothing waits on a timer; outcomes that
/// arrive while a transaction is being written join the next one. Under load that makes one
/// transaction per batch of finished jobs instead of one per job. After each transaction the
/// handler learns, per outcome, whether the fence accepted it.
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
            let (batch, waiters) = state.withLock { state -> ([Item], [CheckedContinuation<Void, Never>]) in
                let batch = state.pending
                state.pending = []
                guard batch.isEmpty else { return (batch, []) }
                state.flushing = false
                defer { state.idleWaiters = [] }
                return (batch, state.idleWaiters)
            }
            if batch.isEmpty {
                for waiter in waiters { waiter.resume() }
                return
            }
            let result: Result<Set<JobID>, any Error>
            do {
                result = .success(try await store.complete(batch.map { ($0.job, $0.outcome) }, workerID: workerID))
            } catch {
                result = .failure(error)
            }
            handler.withLock { $0 }?(batch, result)
        }
    }
}
