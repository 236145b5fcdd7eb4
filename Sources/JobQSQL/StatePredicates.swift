extension StoreSQL {
    /// Jobs waiting for their run time (`scheduled`, or `failed` until the retry): the predicate
    /// of the `jobq_jobs_due` index, spelled as the index spells it, since SQLite walks a partial
    /// index only for a query that states its predicate. Comparisons joined by OR, not an IN
    /// list: SQLite builds a temporary b-tree for an IN list each time a statement runs
    /// (migration 21).
    package static let dueState = "(state = 'scheduled' OR state = 'failed')"

    /// Jobs an expiry deadline may still end (not started, not finished): the state predicate of
    /// the `jobq_jobs_expiring` index, spelled as the index spells it (``dueState``).
    package static let expirableState =
        "(state = 'waiting' OR state = 'scheduled' OR state = 'ready' OR state = 'failed')"
}
