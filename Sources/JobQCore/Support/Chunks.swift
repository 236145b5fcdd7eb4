extension Array {
    /// Consecutive slices of at most `size` elements, in order: the store writes many rows a
    /// statement, up to a fixed number each (events, successes, claimed ids).
    package func chunks(of size: Int) -> [ArraySlice<Element>] {
        stride(from: 0, to: count, by: size).map { self[$0..<Swift.min($0 + size, count)] }
    }
}

/// The power of two at least `count` (1 for 0): how many rows a multi-row statement is built
/// for, the rest padded with rows that match nothing, so that a connection caches a handful of
/// statement texts instead of one per row count (each prepared statement holds memory).
package func paddedRowCount(_ count: Int) -> Int {
    var rows = 1
    while rows < count { rows *= 2 }
    return rows
}
