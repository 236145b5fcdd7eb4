import Testing

@testable import JobQCore
@testable import JobQSQL

/// `jobq copy` copies every table of the schema: a table added later must be placed in the
/// copy's plan (or said not to be copied, and why), or this fails.
@Suite struct CopyPlanTests {
    @Test func everyTableIsCopiedOrSaidNotToBe() {
        let planned = Set(CopyPlan.tables.map(\.name))
        let declared = Set(CopyPlan.notCopiedAsRows.keys)
        #expect(planned.isDisjoint(with: declared))
        #expect(planned.union(declared) == StoreTables.names)
    }

    @Test func aChecksumOfRowsIsTheSameInAnyOrderButNotForOtherRows() {
        var a = CopyChecksum(ordered: false)
        var b = CopyChecksum(ordered: false)
        let rows: [[SQLValue]] = [[.integer(1), .text("x")], [.integer(2), .null], [.real(1.5), .text("")]]
        for row in rows { a.add(row) }
        for row in rows.reversed() { b.add(row) }
        #expect(a.hex == b.hex && a.rows == 3)
        var c = CopyChecksum(ordered: false)
        for row in [[.integer(1), .text("x")], [.integer(2), .text("")], [.real(1.5), .null]] as [[SQLValue]] {
            c.add(row)
        }
        #expect(c.hex != a.hex)
        // In order: the same rows in another order differ.
        var d = CopyChecksum(ordered: true)
        var e = CopyChecksum(ordered: true)
        for row in rows { d.add(row) }
        for row in rows.reversed() { e.add(row) }
        #expect(d.hex != e.hex)
        // A text's end is marked: ("ab", "c") is not ("a", "bc").
        var f = CopyChecksum(ordered: false)
        var g = CopyChecksum(ordered: false)
        f.add([.text("ab"), .text("c")])
        g.add([.text("a"), .text("bc")])
        #expect(f.hex != g.hex)
    }
}
