extension Array {
    /// Consecutive slices of at most `size` elements, in order: the store writes many rows a
    /// statement, up to a fixed number each (events, successes, claimed ids).
    package func chunks(of size: Int) -> [ArraySlice<Element>] {
        stride(from: 0, to: count, by: size).map { self[$0..<Swift.min($0 + size, count)] }
    }
}
