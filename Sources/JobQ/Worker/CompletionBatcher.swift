import Synchronization

/// Coalesces the outcomes of many attempts into one write transaction.
///
/// The first outcome to arrive starts a flush at once, so nothing waits on a timer; outcomes
/// that arrive while a transaction is being written join the next one. Under load that makes
/// one transaction per batch of finished jobs instead of one per job, and each caller still
/// learns whether its own outcome was accepted or refused by the fence.
final class CompletionBatcher: Sendable {
    private struct Pending {
        let job: ClaimedJob
        let outcome: AttemptOutcome
        let continuation: CheckedContinuation<Result<Bool, any Error>, Never>
    }

    private struct State {
        var pending: [Pending] = []
        var flushing = false
    }

    private let store: SQLiteStore
    private let workerID: String
    private let state = Mutex(State())

    init(store: SQLiteStore, workerID: String) {
        self.store = store
        self.workerID = workerID
    }

    /// Records one outcome. Returns false when the fence refused it (the job was no longer
    /// this worker's attempt).
    func record(_ job: ClaimedJob, _ outcome: AttemptOutcome) async throws -> Bool {
        let result = await withCheckedContinuation { continuation in
            let startFlush = state.withLock { state in
                state.pending.append(Pending(job: job, outcome: outcome, continuation: continuation))
                defer { state.flushing = true }
                return !state.flushing
            }
            if startFlush {
                // Unstructured on purpose: a flush must finish even if the submitting task is
                // cancelled (a worker shutting down still records its released jobs).
                Task { await self.flush() }
            }
        }
        return try result.get()
    }

    private func flush() async {
        // Let the jobs that are finishing at this moment add their outcomes first: a few
        // yields cost microseconds and turn one transaction per job into one per batch.
        for _ in 0..<3 { await Task.yield() }
        while true {
            let batch = state.withLock { state -> [Pending] in
                let batch = state.pending
                state.pending = []
                if batch.isEmpty { state.flushing = false }
                return batch
            }
            if batch.isEmpty { return }
            do {
                let refused = try await store.complete(batch.map { ($0.job, $0.outcome) }, workerID: workerID)
                for item in batch { item.continuation.resume(returning: .success(!refused.contains(item.job.id))) }
            } catch {
                for item in batch { item.continuation.resume(returning: .failure(error)) }
            }
        }
    }
}
