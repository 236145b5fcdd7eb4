import Foundation
import JobQCore

/// A ``Store`` whose transactions are SQL (``SQLTransaction``): SQLite in a file, or a database
/// server. Every state change, with all its consequences, is written once in this protocol's
/// extensions (the `SQLStore+*.swift` files); a store provides its transactions and how its
/// hot path's round trips are made: its `enqueue`, `claim` and `complete` (and its event reads)
/// step through the shared decisions (``ClaimLoop``) with the shared transactions here
/// (``enqueueInTransaction(_:lock:)``, ``claimInTransaction(queues:limit:workerID:lease:startingNow:)``,
/// ``recordInTransaction(_:starting:workerID:)``) or with statements of its own.
package protocol SQLStore: Store {
    associatedtype Transaction: SQLTransaction

    /// Runs `body` in a write transaction, committed when it returns and rolled back when it
    /// throws. An `.exclusive` write runs alone among all processes' writes on the store, so
    /// that what it reads stays true until it commits; `.shared` writes (see ``WriteLock``) run
    /// beside each other where the store allows it (a server), never beside an exclusive one.
    /// `audience`: who in other processes this commit should wake, where the store can tell.
    func write<T: Sendable>(
        _ length: TransactionLength, audience: CommitAudience, lock: WriteLock,
        _ body: @escaping @Sendable (Transaction) throws -> T
    ) async throws -> T
    /// Runs `body` in a read transaction: one snapshot of the store.
    func read<T: Sendable>(_ length: TransactionLength, _ body: @escaping @Sendable (Transaction) throws -> T)
        async throws
        -> T
    /// The store's schema version, as its migrator numbers it.
    static func schemaVersion(_ db: Transaction) throws -> Int
    /// An index of jobq's tables, by `name`, as a statement that drops it refers to it: a
    /// server store qualifies it with its schema.
    func indexReference(_ name: String) -> String
    /// Whether this process finds the store out of reach, or did a moment ago (a server
    /// restarting): expired leases then wait to be reclaimed, since the workers holding them
    /// were cut off too and renew them once it answers. A file store is never out of reach.
    var reclaimsHeldOff: Bool { get }
    /// The columns of jobq's table `name` (without the prefix), in order: what a copy of the
    /// store reads and writes (``StoreCopier``).
    func columns(ofTable name: String, _ db: Transaction) throws -> [String]
    /// After a copy wrote rows with the ids they had on another store: makes the ids given to
    /// new jobs, events, workflows, groups, trees and nodes start past them.
    func advanceIDsAfterCopy(_ db: Transaction) throws
}

extension SQLStore {
    package var reclaimsHeldOff: Bool { false }
}

extension SQLStore {
    package func write<T: Sendable>(
        _ length: TransactionLength, audience: CommitAudience, _ body: @escaping @Sendable (Transaction) throws -> T
    ) async throws -> T {
        try await write(length, audience: audience, lock: .exclusive, body)
    }

    package func write<T: Sendable>(_ length: TransactionLength, _ body: @escaping @Sendable (Transaction) throws -> T)
        async throws -> T
    {
        try await write(length, audience: .workersAndFollowers, body)
    }

    package func write<T: Sendable>(_ body: @escaping @Sendable (Transaction) throws -> T) async throws -> T {
        try await write(.long, audience: .workersAndFollowers, body)
    }

    package func read<T: Sendable>(_ body: @escaping @Sendable (Transaction) throws -> T) async throws -> T {
        try await read(.long, body)
    }
}

/// The SQL of every state change and its consequences, shared by all ``SQLStore``s: each
/// function takes the transaction it runs in.
package enum StoreSQL {
    /// Now, in Unix seconds: what a transaction stamps on the rows it writes.
    package static func now() -> Double { Date().timeIntervalSince1970 }
}

/// Which other write transactions a write may run beside.
///
/// Rules (a dependent unlocked, a group's or lane's or batch's counters, a unique key, a
/// schedule's next occurrence) read rows and write what follows from them: those transactions
/// are exclusive, so that what they read stays true until they commit. The hot path changes
/// only rows it owns: a claim takes ready rows no one else holds (SKIP LOCKED), a self-contained enqueue
/// inserts new rows, a worker's successes, start marks and lease renewals are fenced on its own
/// running attempts. Those are shared: on a server, claims and completions of different
/// workers and machines run side by side instead of queueing behind one lock. SQLite has one
/// writer at a time whatever the lock.
package enum WriteLock: Sendable {
    /// Runs alone among all writes on the store.
    case exclusive
    /// Runs beside other shared writes; changes only rows it inserts or owns (see above).
    case shared
}

/// How long a transaction runs, which decides the thread it runs on.
package enum TransactionLength: Sendable {
    /// A few rows by index (an enqueue, a claim, a batch of completions, a page of events):
    /// tens to hundreds of microseconds, short enough to run on the caller's thread.
    case short
    /// Anything that may touch many rows (status counts, listing, pruning, migrations): runs
    /// off the threads Swift concurrency runs tasks on.
    case long
}
