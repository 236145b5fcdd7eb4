import Foundation
import Logging
import Synchronization

extension WorkerPool {
    /// Makes the jobs of due schedule occurrences until cancelled. It sleeps until the earliest
    /// occurrence, or until something changes (a schedule added in this process, or any commit
    /// of another process, which may have been one), and then looks again: it never polls on a
    /// timer of its own. Any number of pools may run it; an occurrence makes one job.
    func runScheduler(alarm: SchedulerAlarm) async {
        while !Task.isCancelled {
            var wait = Duration.seconds(3600)
            do {
                if let next = try await queue.nextScheduledOccurrence() {
                    if next <= Date() {
                        let made = try await queue.runDueSchedules(now: Date())
                        if !made.isEmpty { logger.debug("scheduler made \(made.count) job(s)") }
                        // More may be due (at most 100 schedules per step): look again at once.
                        wait = .zero
                    } else {
                        // At most a day: the loop looks again anyway, and a date far off never overflows.
                        wait = .milliseconds(Int64(min(next.timeIntervalSinceNow, 86_400) * 1000) + 1)
                    }
                }
            } catch {
                logger.storeFailure(.error, error, "the scheduler could not run due schedules: \(error)")
                wait = .seconds(1)
            }
            guard wait > .zero else { continue }
            let poked = await alarm.wait(upTo: wait)
            // Commits come in bursts on a busy store: one look per 100ms is enough for them.
            if poked { try? await Task.sleep(for: min(.milliseconds(100), wait)) }
        }
    }
}

/// Wakes the scheduler early; a poke while it is awake is kept for its next wait.
final class SchedulerAlarm: Sendable {
    private let state = Mutex<(poked: Bool, waiter: CheckedContinuation<Bool, Never>?)>((false, nil))

    func poke() { resume(poked: true) }

    /// Waits until poked (true) or until `limit` passed (false), or the task is cancelled.
    func wait(upTo limit: Duration) async -> Bool {
        let timer = Task { [weak self] in
            try? await Task.sleep(for: limit)
            self?.resume(poked: false)
        }
        defer { timer.cancel() }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                // Cancelled before the waiter is in place, `onCancel` found nothing to resume:
                // the flag is already set then, and checked under the same lock.
                let ready = state.withLock { state -> Bool? in
                    if Task.isCancelled { return false }
                    if state.poked {
                        state.poked = false
                        return true
                    }
                    state.waiter = continuation
                    return nil
                }
                if let ready { continuation.resume(returning: ready) }
            }
        } onCancel: {
            self.resume(poked: false)
        }
    }

    private func resume(poked: Bool) {
        let waiter = state.withLock { state -> CheckedContinuation<Bool, Never>? in
            guard let waiter = state.waiter else {
                if poked { state.poked = true }
                return nil
            }
            state.waiter = nil
            return waiter
        }
        waiter?.resume(returning: poked)
    }
}
