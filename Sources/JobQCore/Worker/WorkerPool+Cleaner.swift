import Foundation
import Logging

extension WorkerPool {
    /// Runs the cleaner every `interval` (the first pass after a tenth of it, at most 5 s),
    /// until cancelled. Off the hot path: its own small transactions, with pauses between them.
    func runCleaner(every interval: Duration) async {
        var wait = min(interval / 10, .seconds(5))
        while !Task.isCancelled {
            try? await Task.sleep(for: wait)
            if Task.isCancelled { break }
            wait = interval
            do {
                let report = try await queue.clean(
                    holder: workerID, batch: JobQueue.cleanerBatch, pause: JobQueue.cleanerPause)
                if report.jobs > 0 || report.events > 0 {
                    logger.info(
                        "cleaner deleted finished jobs and old events past their retention",
                        metadata: [
                            "jobs": "\(report.jobs)", "events": "\(report.events)",
                            "kept for references": "\(report.keptForReferences)"
                        ])
                }
            } catch {
                logger.storeFailure(
                    .warning, error, "the cleaner could not finish its pass: \(error); trying again in \(interval)")
            }
        }
    }
}
