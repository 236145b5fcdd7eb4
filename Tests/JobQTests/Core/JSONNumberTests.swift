import Foundation
import Testing

@testable import JobQCore
@testable import JobQSQL

/// JSON numbers compared by their exact value, as filters compare payload numbers on SQLite.
@Suite("Exact JSON numbers")
struct JSONNumberTests {
    @Test func numbersCompareByTheirExactValue() {
        #expect(JSONNumber.compare("123456789012345678901234567890", "1.2345678901234567890123456789e29") == 0)
        #expect(JSONNumber.compare("0.1", "1e-1") == 0)
        #expect(JSONNumber.compare("-0", "0") == 0)
        #expect(JSONNumber.compare("9007199254740993", "9007199254740992") == 1)
        #expect(JSONNumber.compare("-1e400", "-1e401") == 1)
        #expect(JSONNumber.compare("1e-400", "0") == 1)
        #expect(JSONNumber.compare("100", "1E+2") == 0)
        #expect(JSONNumber.compare("01", "1") == nil, "not JSON")
        #expect(JSONNumber("1e10000".utf8)?.isWithinLimits == true)
        #expect(JSONNumber("1e10001".utf8)?.isWithinLimits == false)
        #expect(JSONNumber("1e-10001".utf8)?.isWithinLimits == false)
    }
}
