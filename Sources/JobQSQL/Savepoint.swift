extension SQLTransaction {
    /// Runs `body` in a savepoint: when it throws, what it wrote is undone (its rows, and the
    /// events it appended to the outbox) and its error rethrown, and the transaction goes on
    /// without it. For a part that must not take the rest down with it.
    package func inSavepoint<T>(_ body: () throws -> T) throws -> T {
        let events = outbox.count
        try execute(sql: "SAVEPOINT jobq_part")
        do {
            let result = try body()
            try execute(sql: "RELEASE jobq_part")
            return result
        } catch {
            outbox.truncate(to: events)
            try execute(sql: "ROLLBACK TO jobq_part")
            try execute(sql: "RELEASE jobq_part")
            throw error
        }
    }
}
