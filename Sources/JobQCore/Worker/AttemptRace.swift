import Foundation
import Synchronization

/// Resolves once: the first of "the executor finished", "the deadline passed" and "interrupted"
/// wins, and later ones are ignored. Lets a worker stop waiting for an executor that ignores
/// cancellation.
final class AttemptRace: Sendable {
    enum End: Sendable {
        case finished(Result<String, any Error>)
        case timedOut(Duration)
        case interrupted
    }

    private enum State {
        case pending
        case waiting(CheckedContinuation<End, Never>)
        case resolved(End)
        case consumed
    }

    private let state = Mutex(State.pending)

    /// Returns whether `end` won: false when the race was already decided (an executor that
    /// finished a moment before its job was found cancelled or taken over).
    @discardableResult
    func resolve(_ end: End) -> Bool {
        let (won, continuation) = state.withLock { state -> (Bool, CheckedContinuation<End, Never>?) in
            switch state {
            case .pending:
                state = .resolved(end)
                return (true, nil)
            case .waiting(let continuation):
                state = .consumed
                return (true, continuation)
            case .resolved, .consumed:
                return (false, nil)
            }
        }
        continuation?.resume(returning: end)
        return won
    }

    var isResolved: Bool {
        state.withLock { state in
            switch state {
            case .pending, .waiting: return false
            case .resolved, .consumed: return true
            }
        }
    }

    func wait() async -> End {
        await withCheckedContinuation { continuation in
            let ready: End? = state.withLock { state in
                if case .resolved(let end) = state {
                    state = .consumed
                    return end
                }
                state = .waiting(continuation)
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }
}
