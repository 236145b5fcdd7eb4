import Synchronization
import Testing

@testable import JobQCore

@Suite("Work shielded from its caller's cancellation")
struct UncancelledTests {
    /// The caller is cancelled while the shielded work waits: the work is not cancelled, runs
    /// to its end, and its result reaches the caller (a claim's jobs reach the pool that
    /// releases them).
    @Test func shieldedWorkFinishesAndReturnsAfterTheCallerIsCancelled() async throws {
        let sawCancellation = CancellationSeen()
        let (gate, open) = AsyncStream<Void>.makeStream()
        let caller = Task {
            try await uncancelled { @Sendable in
                // Waits for the test to cancel the caller, then for a sleep that would throw
                // if this work were cancelled.
                for await _ in gate { break }
                try await Task.sleep(for: .milliseconds(50))
                sawCancellation.value.withLock { $0 = Task.isCancelled }
                return 42
            }
        }
        try await Task.sleep(for: .milliseconds(20))
        caller.cancel()
        open.yield()
        #expect(try await caller.value == 42)
        #expect(sawCancellation.value.withLock { $0 } == false)
    }

    /// Without the shield the same work is cancelled: the test above would fail.
    @Test func unshieldedWorkIsCancelledWithItsCaller() async throws {
        let (gate, open) = AsyncStream<Void>.makeStream()
        let caller = Task {
            for await _ in gate { break }
            try await Task.sleep(for: .milliseconds(50))
            return 42
        }
        try await Task.sleep(for: .milliseconds(20))
        caller.cancel()
        open.yield()
        await #expect(throws: CancellationError.self) { try await caller.value }
    }
}

private final class CancellationSeen: Sendable {
    let value = Mutex<Bool?>(nil)
}
