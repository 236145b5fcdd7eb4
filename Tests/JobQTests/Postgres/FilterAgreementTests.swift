import Foundation
import Testing

@testable import JobQCore
@testable import JobQSQL

/// One filter means one thing on every store: generated payloads (escaped and unescaped names,
/// numbers beyond 64-bit integers and doubles, arrays under names that read as indexes, strings
/// with escapes) and generated filter expressions over them, run on SQLite and on PostgreSQL,
/// must select exactly the same jobs. Seeded: a failure prints its seed, and
/// `JOBQ_FILTER_SEED=N JOBQ_TEST_RUN_ALONE=1 swift test --filter FilterAgreementTests` replays
/// it. Runs alone (``RunsAlone``): its thousands of queries would starve the timing-sensitive
/// tests beside it.
@Suite(
    "One filter, one meaning on every store", RunsAlone.trait,
    .enabled(if: PostgresTestServer.available, PostgresTestServer.skipReason))
struct FilterAgreementTests {
    static let payloads = 250
    static let filters = 1_000

    @Test func generatedFiltersSelectTheSameJobsOnBothStores() async throws {
        let seed =
            ProcessInfo.processInfo.environment["JOBQ_FILTER_SEED"].flatMap(UInt64.init)
            ?? UInt64.random(in: 1...1 << 40)
        print("[filter agreement] seed \(seed): replay with JOBQ_FILTER_SEED=\(seed)")
        var random = SeededRandom(seed: seed)
        var generator = FilterCaseGenerator()

        var requests: [JobRequest] = []
        var texts: [String] = []
        var refusedPayloads = 0
        while requests.count < Self.payloads {
            let text = generator.payload(&random)
            do {
                requests.append(try JobRequest(executor: "echo", payloadJSON: text))
                texts.append(text)
            } catch {
                refusedPayloads += 1
            }
        }
        let sqlite = try await TestStore.sqlite.open()
        let postgres = try await TestStore.postgres.open()
        let sqliteIDs = try await sqlite.enqueue(contentsOf: requests).map(\.id)
        let postgresIDs = try await postgres.enqueue(contentsOf: requests).map(\.id)
        let sqliteIndex = Dictionary(uniqueKeysWithValues: sqliteIDs.enumerated().map { ($1, $0) })
        let postgresIndex = Dictionary(uniqueKeysWithValues: postgresIDs.enumerated().map { ($1, $0) })

        var refusedFilters = 0
        var selecting = 0
        var disagreements = 0
        for _ in 0..<Self.filters {
            let expression = generator.filter(&random)
            guard let filter = try? JobFilter(expression) else {
                refusedFilters += 1
                continue
            }
            let onSQLite = Set(try await sqlite.jobs(where: filter, limit: 1_000).compactMap { sqliteIndex[$0.id] })
            let onPostgres = Set(
                try await postgres.jobs(where: filter, limit: 1_000).compactMap { postgresIndex[$0.id] })
            if !onSQLite.isEmpty { selecting += 1 }
            guard onSQLite != onPostgres else { continue }
            disagreements += 1
            let differing = onSQLite.symmetricDifference(onPostgres).sorted().prefix(3)
            Issue.record(
                """
                seed \(seed): `\(expression)` selects \(onSQLite.count) jobs on SQLite and \(onPostgres.count) on PostgreSQL; \
                payloads selected by one only (\(onSQLite.subtracting(onPostgres).isEmpty ? "PostgreSQL" : "SQLite") first): \
                \(differing.map { texts[$0] }.joined(separator: "  |  "))
                """)
            if disagreements >= 5 { break }
        }
        print(
            "[filter agreement] seed \(seed): \(Self.filters) filters (\(refusedFilters) refused by the parser, "
                + "\(selecting) selecting jobs) over \(Self.payloads) payloads (\(refusedPayloads) refused at entry)")
        // The generator must exercise the stores, not the parser alone.
        #expect(selecting > Self.filters / 10, "too few generated filters select anything: \(selecting)")
        #expect(refusedFilters < Self.filters / 2, "too many generated filters are refused: \(refusedFilters)")
    }
}

/// SplitMix64: small, fast, and the same sequence for a seed on every machine.
struct SeededRandom: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Payload texts and filter expressions drawn from small vocabularies, so that filters often
/// name members that payloads have, with the awkward cases each store once read its own way.
struct FilterCaseGenerator {
    /// Member names: plain, non-ASCII (written escaped or not), names that read as array indexes
    /// on one store, one with a space.
    static let names = ["a", "b", "c", "café", "+0", "-1", " 1", "0", "x y", "ß"]
    static let numbers = [
        "0", "-0", "1", "-1", "5", "6", "7", "2.5", "-2.5", "0.1", "1e-1", "10", "1e1", "1E+1", "100",
        "9223372036854775807", "9223372036854775808", "-9223372036854775808", "-9223372036854775809",
        "18446744073709551616", "123456789012345678901234567890", "1.2345678901234567890123456789e29",
        "9007199254740993", "9007199254740992", "1e308", "1e309", "1e400", "-1e400", "1e-400", "4.9e-324",
        "0.30000000000000004", "0.3", "1e10001"
    ]
    static let strings = [
        "", "x", "acme", "Acme", "first", "second", "é", "e\u{301}", "\u{1F600}", "a\"b", "back\\slash", "tab\t",
        "5", "null", "true", "\u{7F}"
    ]

    func name(_ random: inout SeededRandom) -> String { Self.names.randomElement(using: &random)! }

    /// A name as a JSON string literal, sometimes with every non-ASCII character escaped (as
    /// Python's json.dumps writes it).
    func literal(_ text: String, _ random: inout SeededRandom) -> String {
        let escapeAll = Bool.random(using: &random)
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\t": out += "\\t"
            default:
                if scalar.value < 0x20 || (escapeAll && scalar.value > 0x7E) {
                    for unit in String(scalar).utf16 { out += String(format: "\\u%04x", unit) }
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out + "\""
    }

    func scalar(_ random: inout SeededRandom) -> String {
        switch Int.random(in: 0..<10, using: &random) {
        case 0..<4: Self.numbers.randomElement(using: &random)!
        case 4..<7: literal(Self.strings.randomElement(using: &random)!, &random)
        case 7: "true"
        case 8: "false"
        default: "null"
        }
    }

    func value(_ random: inout SeededRandom, depth: Int) -> String {
        switch Int.random(in: 0..<10, using: &random) {
        case 0..<6 where true: return scalar(&random)
        case 6..<8 where depth < 2: return object(&random, depth: depth + 1)
        case 8..<10 where depth < 2:
            let count = Int.random(in: 0...3, using: &random)
            return "[" + (0..<count).map { _ in value(&random, depth: depth + 1) }.joined(separator: ",") + "]"
        default: return scalar(&random)
        }
    }

    func object(_ random: inout SeededRandom, depth: Int) -> String {
        let count = Int.random(in: 1...4, using: &random)
        // Mostly distinct names; now and then one twice (refused at entry).
        var names = (0..<count).map { _ in name(&random) }
        if Int.random(in: 0..<20, using: &random) != 0 { names = Array(Set(names)) }
        let space = Bool.random(using: &random) ? " " : ""
        return "{"
            + names.map { literal($0, &random) + ":" + space + value(&random, depth: depth) }.joined(separator: ",")
            + "}"
    }

    mutating func payload(_ random: inout SeededRandom) -> String { object(&random, depth: 0) }

    /// One to three terms: member comparisons and existence tests, some negated.
    mutating func filter(_ random: inout SeededRandom) -> String {
        (0..<Int.random(in: 1...3, using: &random)).map { _ in term(&random) }.joined(separator: " ")
    }

    /// Mostly names a pointer may hold; now and then one that reads as an index (refused).
    private func pointer(_ random: inout SeededRandom) -> String {
        let depth = Int.random(in: 1...2, using: &random)
        return (0..<depth).map { _ in
            var name = name(&random)
            while PayloadPointer.readsAsIndex(name), Int.random(in: 0..<20, using: &random) != 0 {
                name = self.name(&random)
            }
            return "/" + name
        }.joined()
    }

    private func term(_ random: inout SeededRandom) -> String {
        let negated = Int.random(in: 0..<5, using: &random) == 0 ? "-" : ""
        var member = pointer(&random)
        // A pointer with a space is written quoted.
        if member.contains(" ") { member = "\"" + member + "\"" }
        if Int.random(in: 0..<6, using: &random) == 0 { return negated + member + " exists" }
        let value = scalar(&random)
        let isOrdered = value.first == "\"" || value.first?.isNumber == true || value.first == "-"
        let order =
            isOrdered
            ? ["=", "!=", "<", "<=", ">", ">="].randomElement(using: &random)!
            : ["=", "!="].randomElement(using: &random)!
        return negated + member + " " + order + " " + value
    }
}
