import Foundation
import Synchronization

/// A set of callbacks that come and go (a pool's wake-up, an event feed's): each added one gets
/// a token to remove it with, and ``callAll()`` calls those present, outside the lock.
///
/// ```swift
/// let token = callbacks.add { signal.poke() }
/// defer { callbacks.remove(token) }
/// ```
package final class Callbacks: Sendable {
    private let entries = Mutex<[UUID: @Sendable () -> Void]>([:])

    package init() {}

    package func add(_ callback: @escaping @Sendable () -> Void) -> UUID {
        let token = UUID()
        entries.withLock { $0[token] = callback }
        return token
    }

    package func remove(_ token: UUID) {
        _ = entries.withLock { $0.removeValue(forKey: token) }
    }

    package func callAll() {
        for callback in entries.withLock({ Array($0.values) }) { callback() }
    }
}
