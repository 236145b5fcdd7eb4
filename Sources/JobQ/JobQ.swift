// `import JobQ` gives an embedder the whole queue on its default store: the core (jobs,
// workers, workflows, schedules, the store interface) and the SQLite store that
// `JobQueue(path:)` opens. The PostgreSQL store is its own product, `JobQPostgres`.
@_exported import JobQCore
@_exported import JobQSQLite
