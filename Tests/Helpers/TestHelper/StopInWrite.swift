import Foundation
import JobQ
import JobQPostgres

/// A process that stops itself with SIGSTOP in the middle of a write transaction on a
/// PostgreSQL store, as a worker does when an operator pauses it or its machine hangs: its
/// session sits idle inside the transaction, holding the transaction's locks.
enum StopInWrite {
    struct Frozen: DataMigrator {
        static let name = "frozen"
        static let targetVersion = 1

        func initialize(_ context: DataMigrationContext) async throws {
            try await context.write { db in
                try db.execute("SELECT 1")
                FileHandle.standardOutput.write(Data("stopping inside the transaction\n".utf8))
                raise(SIGSTOP)
            }
        }

        func migrate(to version: Int, context: DataMigrationContext) async throws {}
    }

    static func run(db: String) async throws {
        let queue = try await JobQueue(postgres: db)
        try await queue.runDataMigration(Frozen())
    }
}
