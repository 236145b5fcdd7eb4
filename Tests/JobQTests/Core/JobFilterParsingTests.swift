import Foundation
import Testing

@testable import JobQCore

/// Reading the filter language: what each term becomes, and where a bad one is refused.
@Suite("Reading job filters")
struct JobFilterParsingTests {
    @Test func termsBecomeConditions() throws {
        let filter = try JobFilter(
            #"  state:dead,cancelled  executor:mail -/customer = "a b" /n>=2.5 error~"time out" finished<24h attempt>1 "/a b" exists"#
        )
        typealias C = JobFilter.Condition
        let expected: [(Bool, C)] = [
            (false, .textIn(.state, ["dead", "cancelled"])),
            (false, .textIn(.executor, ["mail"])),
            (true, .payloadEquals(try PayloadPointer("/customer"), .string("a b"))),
            (false, .payloadCompare(try PayloadPointer("/n"), .greaterOrEqual, .number("2.5"))),
            (false, .textContains(.error, "time out")),
            (false, .ageCompare(.finished, .less, .seconds(86_400))),
            (false, .integerCompare(.attempt, .greater, 1)),
            (false, .payloadExists(try PayloadPointer("/a b")))
        ]
        #expect(filter.terms.map(\.negated) == expected.map(\.0))
        #expect(filter.terms.map(\.condition) == expected.map(\.1))
        #expect(try JobFilter("").terms.isEmpty)
        #expect(
            try JobFilter("/x != 1").terms == [
                .init(negated: true, condition: .payloadEquals(try PayloadPointer("/x"), .number("1")))
            ])
        #expect(try JobFilter("-/x != 1").terms.first?.negated == false)
        let date = try #require(ISO8601.parse("2026-11-01T00:00:00Z"))
        #expect(
            try JobFilter("created>=2026-11-01").terms.first?.condition == .timeCompare(.created, .greaterOrEqual, date)
        )
        let combined = try JobFilter("queue:a").and(JobFilter("state:dead"))
        #expect(combined.expression == "queue:a state:dead")
        #expect(combined.terms.count == 2)
    }

    /// Each bad expression is refused at the character (counted from 1) where reading stopped,
    /// with words that say what was expected.
    @Test(arguments: [
        ("stat:dead", 1, "unknown field 'stat'"),
        ("state:done", 7, "unknown state 'done'"),
        ("state~dead", 6, "state takes ':'"),
        ("state:dead /amount >> 100", 20, "unknown operator '>>'"),
        ("/amount > abc", 11, "is not a JSON value"),
        ("/amount > true", 9, "orders numbers and strings only"),
        ("/amount", 8, "expected an operator"),
        ("/amount =", 10, "expected a JSON value"),
        ("/0 = 1", 1, "an array index"),
        ("/a~2 = 1", 1, "'~0' or '~1'"),
        (#"name:"open"#, 6, "never closed"),
        ("attempt>one", 9, "whole numbers"),
        ("finished:1h", 9, "finished takes '<' or '>'"),
        ("finished<yesterday", 10, "neither a duration"),
        ("queue:", 7, "expected a value"),
        ("queue:a,", 9, "expected a value after a comma"),
        (#"name:"a"queue:b"#, 9, "expected a space"),
        ("=1", 1, "expected a field"),
        ("- state:dead", 2, "expected a field")
    ])
    func badExpressionsAreRefusedWhereTheyGoWrong(expression: String, position: Int, words: String) {
        #expect {
            try JobFilter(expression)
        } throws: { error in
            let message = (error as? JobQueueError)?.description ?? ""
            return message.contains("at character \(position):") && message.contains(words)
        }
    }

    @Test func sizeIsBounded() throws {
        let many = Array(repeating: "queue:a", count: JobFilter.maximumTerms + 1).joined(separator: " ")
        #expect(throws: JobQueueError.self) { try JobFilter(many) }
        #expect(throws: JobQueueError.self) {
            try JobFilter(String(repeating: " ", count: JobFilter.maximumLength + 1))
        }
        let most = Array(repeating: "queue:a", count: JobFilter.maximumTerms).joined(separator: " ")
        #expect(try JobFilter(most).terms.count == JobFilter.maximumTerms)
        #expect(throws: JobQueueError.self) { try JobFilter(most).and(JobFilter("queue:b")) }
    }
}
