import Synchronization

/// Wakes a worker pool's claim loop. Pokes coalesce: many pokes while the loop is busy make one
/// wake-up. A poke that says work arrived lets the loop claim without first polling the store.
final class WakeSignal: Sendable {
    private let continuation: AsyncStream<Void>.Continuation
    let stream: AsyncStream<Void>
    private let workHint = Mutex(false)

    init() {
        (stream, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    func poke(workArrived: Bool = false) {
        if workArrived { workHint.withLock { $0 = true } }
        continuation.yield()
    }

    /// Whether work arrived since the last call.
    func takeWorkHint() -> Bool {
        workHint.withLock { hint in
            defer { hint = false }
            return hint
        }
    }
}
