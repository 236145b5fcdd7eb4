import Foundation
import Testing

@testable import JobQCore
@testable import JobQSQL
@testable import JobQSQLite

/// Cron next-fire times against known answers, in UTC and across DST changes in named zones.
@Suite("Cron expressions")
struct CronTests {
    static func date(_ text: String) -> Date { ISO8601.parse(text)! }

    @Test(arguments: [
        // Minute steps across a month end.
        ("*/15 * * * *", "2026-01-31T23:50:00Z", "2026-02-01T00:00:00Z"),
        // The 31st skips February.
        ("0 0 31 * *", "2026-01-31T00:00:00Z", "2026-03-31T00:00:00Z"),
        // A leap day waits for a leap year.
        ("0 12 29 2 *", "2026-03-01T00:00:00Z", "2028-02-29T12:00:00Z"),
        ("@yearly", "2026-06-01T00:00:00Z", "2027-01-01T00:00:00Z"),
        ("@hourly", "2026-01-01T00:00:00Z", "2026-01-01T01:00:00Z"),
        ("@monthly", "2026-12-15T08:00:00Z", "2027-01-01T00:00:00Z"),
        ("@weekly", "2026-02-01T00:00:00Z", "2026-02-08T00:00:00Z"),
        // Names, any case; weekdays only, in January and July.
        ("0 9 * jan,JUL mon-fri", "2026-01-30T10:00:00Z", "2026-07-01T09:00:00Z"),
        // Both day fields restricted: the 13th or a Friday.
        ("0 0 13 * FRI", "2026-02-01T00:00:00Z", "2026-02-06T00:00:00Z"),
        ("0 0 13 * FRI", "2026-02-06T00:00:00Z", "2026-02-13T00:00:00Z"),
        ("0 0 13 * FRI", "2026-02-13T00:00:00Z", "2026-02-20T00:00:00Z"),
        // 7 is Sunday too; strictly after.
        ("0 0 * * 7", "2026-02-01T00:00:00Z", "2026-02-08T00:00:00Z"),
        // `5/20`: from 5, every 20.
        ("5/20 * * * *", "2026-01-01T00:46:00Z", "2026-01-01T01:05:00Z"),
        ("0 8-18/5 * * *", "2026-01-01T13:00:00Z", "2026-01-01T18:00:00Z")
    ])
    func nextInUTC(expression: String, after: String, expected: String) throws {
        let cron = try CronExpression(expression)
        #expect(cron.next(after: Self.date(after), in: TimeZone(identifier: "UTC")!) == Self.date(expected))
    }

    @Test(arguments: [
        // New York springs forward on 2026-03-08 at 02:00 EST (07:00Z): 02:30 does not exist and
        // runs once at 03:00 EDT; the next day it is 02:30 EDT again.
        ("America/New_York", "30 2 * * *", "2026-03-07T12:00:00Z", ["2026-03-08T07:00:00Z", "2026-03-09T06:30:00Z"]),
        // Four skipped times run once, at the end of the gap.
        ("America/New_York", "*/15 2 * * *", "2026-03-08T05:00:00Z", ["2026-03-08T07:00:00Z", "2026-03-09T06:00:00Z"]),
        // Falls back on 2026-11-01 at 02:00 EDT (06:00Z): 01:30 happens twice and runs once, the
        // first time.
        ("America/New_York", "30 1 * * *", "2026-10-31T12:00:00Z", ["2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z"]),
        // Every half hour: the repeated 01:00 and 01:30 are not run again.
        (
            "America/New_York", "*/30 * * * *", "2026-11-01T05:00:00Z",
            ["2026-11-01T05:30:00Z", "2026-11-01T07:00:00Z", "2026-11-01T07:30:00Z"]
        ),
        // Berlin springs forward on 2026-03-29 at 02:00 CET (01:00Z).
        ("Europe/Berlin", "30 2 * * *", "2026-03-28T12:00:00Z", ["2026-03-29T01:00:00Z", "2026-03-30T00:30:00Z"]),
        // ...and falls back on 2026-10-25 at 03:00 CEST (01:00Z): 02:30 runs once, in summer time.
        ("Europe/Berlin", "30 2 * * *", "2026-10-24T12:00:00Z", ["2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z"]),
        // A zone without DST.
        ("Asia/Tokyo", "0 9 * * *", "2026-01-01T00:00:00Z", ["2026-01-02T00:00:00Z", "2026-01-03T00:00:00Z"])
    ])
    func nextAcrossDaylightSavingChanges(zone: String, expression: String, after: String, expected: [String]) throws {
        let cron = try CronExpression(expression)
        let dates = cron.next(expected.count, after: Self.date(after), in: try #require(TimeZone(identifier: zone)))
        #expect(dates == expected.map(Self.date), "\(dates.map { ISO8601.string($0) })")
    }

    @Test(arguments: [
        ("0 25 * * *", "hour field '25': 25 is out of range 0-23"),
        ("61 * * * *", "minute field '61': 61 is out of range 0-59"),
        ("* * * *", "expected 5 fields"),
        ("*/0 * * * *", "the step after '/' must be a whole number of at least 1"),
        ("5-1 * * * *", "the range 5-1 runs backwards"),
        ("0 0 31 2 *", "never fires"),
        ("0 0 * FOO *", "month field 'FOO': 'FOO' is not a number or a name"),
        ("0 0 1,,2 * *", "an empty item in a list"),
        ("@every", "unknown macro '@every'"),
        ("0 0 * * 8", "day-of-week field '8': 8 is out of range 0-7")
    ])
    func badExpressionsPointAtTheBadPart(expression: String, message: String) {
        #expect {
            try CronExpression(expression)
        } throws: { error in
            guard case JobQueueError.invalidInput(let text) = error else { return false }
            return text.contains(message) && text.contains("cron '\(expression)'")
        }
    }

    @Test func nextFiveAreConsecutive() throws {
        let dates = try CronExpression("0 0 * * *").next(
            5, after: Self.date("2026-02-26T12:00:00Z"), in: TimeZone(identifier: "UTC")!)
        #expect(
            dates.map { ISO8601.string($0) }
                == ["2026-02-27", "2026-02-28", "2026-03-01", "2026-03-02", "2026-03-03"].map { "\($0)T00:00:00.000Z" })
    }
}
