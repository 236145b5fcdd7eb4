import Foundation
import Synchronization

/// What a worker pool ran, minute by minute, until the pool adds it to the store's history
/// (``WorkerPool`` does about every 10 s, and as it stops): kept in memory so that no attempt
/// writes a row of its own for it.
final class HistoryRecorder: Sendable {
    private struct Key: Hashable {
        let minute: Int64
        let queue: String
        let executor: String
    }
    private let pending = Mutex<[Key: HistoryMinute]>([:])

    /// An attempt of a job of `queue` and `executor` that waited `waited` seconds from its run
    /// time to start and ran `ran` seconds, ending now.
    func ran(queue: String, executor: String, waited: Double, ran: Double, at now: Date = Date()) {
        update(queue: queue, executor: executor, at: now) { minute in
            minute.waits.add(seconds: waited)
            minute.runs.add(seconds: ran)
            minute.waitMax = max(minute.waitMax, waited)
            minute.runMax = max(minute.runMax, ran)
        }
    }

    /// An attempt's outcome, once the store recorded it.
    func ended(queue: String, executor: String, outcome: AttemptOutcome, at now: Date = Date()) {
        update(queue: queue, executor: executor, at: now) { minute in
            switch outcome {
            case .succeeded: minute.succeeded += 1
            case .retry: minute.retried += 1
            case .dead: minute.dead += 1
            // A cancellation is counted from the jobs kept (whoever cancelled); the rest end no attempt.
            case .cancelled, .released, .snoozed, .parked: break
            }
        }
    }

    /// Everything recorded so far, taken away.
    func take() -> [HistoryMinute] {
        pending.withLock { pending in
            defer { pending = [:] }
            return Array(pending.values)
        }
    }

    /// Minutes the store did not take, back for the next addition.
    func putBack(_ minutes: [HistoryMinute]) {
        pending.withLock { pending in
            for minute in minutes {
                let key = Key(minute: minute.minute, queue: minute.queue, executor: minute.executor)
                // Merged into what was recorded since, or put back as it was (not merged into
                // a copy of itself, which would count it twice).
                if pending[key] == nil {
                    pending[key] = minute
                } else {
                    pending[key]!.merge(minute)
                }
            }
        }
    }

    private func update(queue: String, executor: String, at now: Date, _ change: (inout HistoryMinute) -> Void) {
        let minute = Int64((now.timeIntervalSince1970 / 60).rounded(.down))
        pending.withLock { pending in
            let key = Key(minute: minute, queue: queue, executor: executor)
            change(&pending[key, default: HistoryMinute(minute: minute, queue: queue, executor: executor)])
        }
    }
}
