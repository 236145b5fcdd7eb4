import Foundation

/// Durations counted in buckets that grow by a quarter of a power of two (bucket `i` holds
/// times below 2^((i+1)/4) ms, the last one everything longer): what the history keeps of the
/// waits and run times of a minute's jobs, small enough for a row, merged by adding, and read
/// back as percentiles within about 19%.
package struct LatencyHistogram: Sendable, Hashable {
    /// Up to 2^25 ms (about 9 hours); longer times go to the last bucket.
    package static let bucketCount = 100
    /// Counts by bucket, without trailing zeros.
    package private(set) var counts: [Int] = []

    package init() {}

    package mutating func add(seconds: Double) {
        let milliseconds = max(seconds * 1000, 0)
        let bucket =
            milliseconds < 1 ? 0 : min(Int((log2(milliseconds) * 4).rounded(.down)) + 1, Self.bucketCount - 1)
        if counts.count <= bucket { counts += Array(repeating: 0, count: bucket + 1 - counts.count) }
        counts[bucket] += 1
    }

    package mutating func merge(_ other: LatencyHistogram) {
        if counts.count < other.counts.count { counts += Array(repeating: 0, count: other.counts.count - counts.count) }
        for (index, count) in other.counts.enumerated() { counts[index] += count }
    }

    /// Adds a stored histogram (``json``), read byte by byte: a day's chart reads tens of
    /// thousands of them. Returns whether it held any duration.
    @discardableResult
    package mutating func add(json: String) -> Bool {
        var index = 0
        var value = 0
        var any = false
        func flush() {
            guard value > 0, index < Self.bucketCount else { return }
            if counts.count <= index { counts += Array(repeating: 0, count: index + 1 - counts.count) }
            counts[index] += value
            any = true
        }
        for byte in json.utf8 {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): value = value &* 10 &+ Int(byte - UInt8(ascii: "0"))
            case UInt8(ascii: ","):
                flush()
                index += 1
                value = 0
            default: break
            }
        }
        flush()
        return any
    }

    package var total: Int { counts.reduce(0, +) }

    /// The time (seconds) below which `fraction` of the durations fall: the upper bound of the
    /// bucket that holds that one; nil for no durations.
    package func percentile(_ fraction: Double) -> Double? {
        let total = self.total
        guard total > 0 else { return nil }
        let rank = max(1, Int((fraction * Double(total)).rounded(.up)))
        var seen = 0
        for (index, count) in counts.enumerated() {
            seen += count
            if seen >= rank { return Self.upperBound(index) }
        }
        return Self.upperBound(counts.count - 1)
    }

    /// The upper bound of bucket `index`, in seconds.
    static func upperBound(_ index: Int) -> Double { pow(2, Double(index) / 4) / 1000 }

    /// As stored: a JSON array of the counts.
    package var json: String { "[" + counts.map(String.init).joined(separator: ",") + "]" }

    /// A stored histogram; what is not an array of counts reads as none.
    package init(json: String) {
        add(json: json)
    }
}
