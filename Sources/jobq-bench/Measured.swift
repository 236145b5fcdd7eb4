/// A throughput measured several times (three unless `--quick`): the bench reports the median,
/// and the spread ((max - min) / median) beside it, so that a reader can tell a difference
/// between two runs from the machine's noise.
struct Measured: Codable {
    let runs: [Double]

    init(_ runs: [Double]) {
        precondition(!runs.isEmpty, "a figure needs at least one run")
        self.runs = runs
    }

    var median: Double {
        let sorted = runs.sorted()
        let middle = sorted.count / 2
        return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
    }

    /// (max - min) / median: 0.05 is a spread of 5 %.
    var spread: Double {
        guard let low = runs.min(), let high = runs.max(), median > 0 else { return 0 }
        return (high - low) / median
    }

    /// The spread, when there was more than one run to spread.
    var repeatedSpread: Double? { runs.count > 1 ? spread : nil }

    /// The ratio of the medians.
    static func / (lhs: Measured, rhs: Measured) -> Double { lhs.median / rhs.median }
}

extension Array {
    /// The median and spread of one figure of runs that each measured several.
    func measured(_ figure: (Element) -> Double) -> Measured { Measured(map(figure)) }
}

extension BenchCommand {
    /// How many times each throughput is measured.
    var runs: Int { quick ? 1 : 3 }

    /// `body`'s figure, measured ``runs`` times.
    func measure(_ body: () async throws -> Double) async throws -> Measured {
        var runs: [Double] = []
        for _ in 0..<self.runs { runs.append(try await body()) }
        return Measured(runs)
    }

    /// `body`'s result, measured ``runs`` times, for workloads that report several figures.
    func repeated<T>(_ body: () async throws -> T) async throws -> [T] {
        var results: [T] = []
        for _ in 0..<runs { results.append(try await body()) }
        return results
    }
}

extension BenchCommand.Row {
    /// A row of medians, with the spread of each.
    init(
        workload: String, value: Measured, unit: String, baseline: String? = nil, baselineValue: Measured? = nil,
        ratio: Double? = nil
    ) {
        self.init(
            workload: workload, value: value.median, unit: unit, baseline: baseline,
            baselineValue: baselineValue?.median, ratio: ratio, spread: value.repeatedSpread,
            baselineSpread: baselineValue?.repeatedSpread)
    }
}
