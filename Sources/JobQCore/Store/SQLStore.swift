import Foundation

/// A ``Store`` whose transactions are SQL (``SQLTransaction``): SQLite in a file, or a database
/// server. Every state change, with all its consequences, is written once in this protocol's
/// extensions (the `SQLStore+*.swift` files); a store provides its transactions.
package protocol SQLStore: Store {
    associatedtype Transaction: SQLTransaction

    /// Runs `body` in a write transaction, committed when it returns and rolled back when it
    /// throws. Write transactions of all processes on the store run one at a time, so that
    /// what a transaction reads stays true until it commits and event ids follow commit order.
    /// `audience`: who in other processes this commit should wake, where the store can tell.
    func write<T: Sendable>(
        _ size: TransactionSize, audience: CommitAudience, _ body: @escaping @Sendable (Transaction) throws -> T
    ) async throws -> T
    /// Runs `body` in a read transaction: one snapshot of the store.
    func read<T: Sendable>(_ size: TransactionSize, _ body: @escaping @Sendable (Transaction) throws -> T) async throws
        -> T
    /// The store's schema version, as its migrator numbers it.
    static func schemaVersion(_ db: Transaction) throws -> Int
}

extension SQLStore {
    package func write<T: Sendable>(_ size: TransactionSize, _ body: @escaping @Sendable (Transaction) throws -> T)
        async throws -> T
    {
        try await write(size, audience: .workersAndFollowers, body)
    }

    package func write<T: Sendable>(_ body: @escaping @Sendable (Transaction) throws -> T) async throws -> T {
        try await write(.large, audience: .workersAndFollowers, body)
    }

    package func read<T: Sendable>(_ body: @escaping @Sendable (Transaction) throws -> T) async throws -> T {
        try await read(.large, body)
    }
}

/// The SQL of every state change and its consequences, shared by all ``SQLStore``s: each
/// function takes the transaction it runs in.
package enum StoreSQL {
    /// Now, in Unix seconds: what a transaction stamps on the rows it writes.
    package static func now() -> Double { Date().timeIntervalSince1970 }
}

/// How much a transaction does, which decides the thread it runs on.
package enum TransactionSize: Sendable {
    /// A few rows by index (an enqueue, a claim, a batch of completions, a page of events):
    /// tens to hundreds of microseconds, short enough to run on the caller's thread.
    case small
    /// Anything that may touch many rows (status counts, listing, pruning, migrations): runs
    /// off the threads Swift concurrency runs tasks on.
    case large
}
