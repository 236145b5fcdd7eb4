import Foundation
import Logging

extension WorkerPool {
    /// The history's lease: one pool of the store samples the backlog at a time.
    static let historyLease = "history"

    /// Adds what the pool ran to the store's history every `interval`, and about once a minute
    /// samples the backlog if no other pool of the store does; until cancelled.
    func recordHistory(every interval: Duration) async {
        var lastSample: Int64?
        while !Task.isCancelled {
            try? await Task.sleep(for: interval)
            if Task.isCancelled { break }
            await addHistory()
            let minute = Int64((Date().timeIntervalSince1970 / 60).rounded(.down))
            guard minute != lastSample else { continue }
            do {
                // Held a little past the next sample, so that one pool keeps sampling.
                guard try await queue.store.acquireLease(Self.historyLease, holder: workerID, for: .seconds(90))
                else { continue }
                try await queue.store.sampleBacklog(minute: minute)
                lastSample = minute
            } catch {
                logger.storeFailure(.warning, error, "sampling the backlog for the history failed: \(error)")
            }
        }
    }

    /// Writes what was recorded since the last addition; kept for the next one if the store
    /// refuses it.
    func addHistory() async {
        guard let history else { return }
        let minutes = history.take()
        guard !minutes.isEmpty else { return }
        do {
            try await queue.store.addHistory(minutes)
        } catch {
            history.putBack(minutes)
            logger.storeFailure(.warning, error, "adding to the history failed: \(error); trying again later")
        }
    }
}
