import Foundation

/// A five-field cron expression (`minute hour day-of-month month day-of-week`) and its
/// occurrences in a time zone.
///
/// Fields take `*`, numbers, ranges (`1-5`), lists (`1,15`), steps (`*/15`, `8-18/2`, `5/10`),
/// and names for months (`JAN`-`DEC`) and weekdays (`SUN`-`SAT`; `0` and `7` are both Sunday).
/// `@yearly` (`@annually`), `@monthly`, `@weekly`, `@daily` (`@midnight`) and `@hourly` stand
/// for their usual expressions. When both day fields are restricted, a day matches if either
/// does (`0 0 13 * FRI`: every 13th and every Friday), as in every cron.
///
/// Daylight saving time is handled as cron users expect: a local time skipped by a spring
/// change runs once, at the first instant after the gap; a local time repeated by an autumn
/// change runs once, the first time it occurs.
///
/// ```swift
/// let cron = try CronExpression("*/15 9-17 * * MON-FRI")
/// let next = cron.next(after: .now, in: TimeZone(identifier: "Europe/Paris")!)
/// ```
public struct CronExpression: Sendable, Hashable, CustomStringConvertible {
    /// The expression as given.
    public let text: String
    let minutes: [Int]
    let hours: [Int]
    let daysOfMonth: Set<Int>
    let months: Set<Int>
    /// 0 (Sunday) to 6.
    let daysOfWeek: Set<Int>
    /// Whether each day field was `*` (or began with it): the OR rule applies only when neither was.
    let anyDayOfMonth: Bool
    let anyDayOfWeek: Bool

    public var description: String { text }

    static let macros = [
        "@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *", "@weekly": "0 0 * * 0",
        "@daily": "0 0 * * *", "@midnight": "0 0 * * *", "@hourly": "0 * * * *"
    ]
    static let monthNames = ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"]
    static let dayNames = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"]

    public init(_ text: String) throws(JobQueueError) {
        self.text = text
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        var expanded = trimmed
        if trimmed.hasPrefix("@") {
            guard let macro = Self.macros[trimmed.lowercased()] else {
                throw .invalidInput(
                    "cron '\(text)': unknown macro '\(trimmed)'; use one of \(Self.macros.keys.sorted().joined(separator: ", ")) or five fields"
                )
            }
            expanded = macro
        }
        let fields = expanded.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
        guard fields.count == 5 else {
            throw .invalidInput(
                "cron '\(text)': expected 5 fields (minute hour day-of-month month day-of-week), e.g. '*/15 9-17 * * MON-FRI'; got \(fields.count)"
            )
        }
        func parse(_ index: Int, _ name: String, _ range: ClosedRange<Int>, names: [String] = [], nameBase: Int = 0)
            throws(JobQueueError) -> Set<Int>
        {
            do {
                return try Self.field(fields[index], range: range, names: names, nameBase: nameBase)
            } catch let error as CronFieldError {
                throw .invalidInput("cron '\(text)': \(name) field '\(fields[index])': \(error.message)")
            } catch {
                throw .invalidInput("cron '\(text)': \(name) field '\(fields[index])': \(error)")
            }
        }
        minutes = try parse(0, "minute", 0...59).sorted()
        hours = try parse(1, "hour", 0...23).sorted()
        daysOfMonth = try parse(2, "day-of-month", 1...31)
        months = try parse(3, "month", 1...12, names: Self.monthNames, nameBase: 1)
        // 7 is Sunday too.
        daysOfWeek = Set(try parse(4, "day-of-week", 0...7, names: Self.dayNames).map { $0 % 7 })
        anyDayOfMonth = fields[2].hasPrefix("*")
        anyDayOfWeek = fields[4].hasPrefix("*")
        // A day that no month has (`0 0 31 2 *`) would never fire: say so now, not never.
        if anyDayOfWeek, let first = daysOfMonth.min(), months.allSatisfy({ Self.longestMonth[$0 - 1] < first }) {
            throw .invalidInput(
                "cron '\(text)': never fires: no month among \(months.sorted().map(String.init).joined(separator: ",")) has a day \(first)"
            )
        }
    }

    static let longestMonth = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]

    struct CronFieldError: Error { let message: String }

    /// The values a field allows.
    static func field(_ text: String, range: ClosedRange<Int>, names: [String], nameBase: Int) throws -> Set<Int> {
        func value(_ token: Substring) throws -> Int {
            if let number = Int(token) {
                guard range.contains(number) else {
                    throw CronFieldError(message: "\(number) is out of range \(range.lowerBound)-\(range.upperBound)")
                }
                return number
            }
            if let index = names.firstIndex(of: token.uppercased()) { return index + nameBase }
            let hint =
                names.isEmpty
                ? "a number from \(range.lowerBound) to \(range.upperBound)"
                : "a number or a name (\(names.joined(separator: ", ")))"
            throw CronFieldError(message: "'\(token)' is not \(hint)")
        }
        var values: Set<Int> = []
        for part in text.split(separator: ",", omittingEmptySubsequences: false) {
            guard !part.isEmpty else { throw CronFieldError(message: "an empty item in a list") }
            var base = part
            var step = 1
            if let slash = part.firstIndex(of: "/") {
                base = part[..<slash]
                guard let number = Int(part[part.index(after: slash)...]), number >= 1 else {
                    throw CronFieldError(message: "the step after '/' must be a whole number of at least 1")
                }
                step = number
            }
            var lower: Int
            var upper: Int
            if base == "*" {
                lower = range.lowerBound
                upper = range.upperBound
            } else if let dash = base.firstIndex(of: "-") {
                lower = try value(base[..<dash])
                upper = try value(base[base.index(after: dash)...])
                guard lower <= upper else { throw CronFieldError(message: "the range \(base) runs backwards") }
            } else {
                lower = try value(base)
                // `5/10` means from 5 to the end, every 10.
                upper = part.contains("/") ? range.upperBound : lower
            }
            values.formUnion(stride(from: lower, through: upper, by: step))
        }
        return values
    }

    /// Whether the local calendar day matches the day fields (with the OR rule).
    func matches(day: Int, weekday: Int) -> Bool {
        let dom = daysOfMonth.contains(day)
        let dow = daysOfWeek.contains(weekday)
        if anyDayOfMonth && anyDayOfWeek { return true }
        if anyDayOfMonth { return dow }
        if anyDayOfWeek { return dom }
        return dom || dow
    }

    /// The first occurrence strictly after `date`, in `zone`; nil if there is none in the next
    /// eight years (a day only a leap year has, on a weekday it rarely falls on, say).
    public func next(after date: Date, in zone: TimeZone) -> Date? {
        let after = Int64(date.timeIntervalSince1970.rounded(.down))
        let localStart = after + Int64(zone.secondsFromGMT(for: Date(timeIntervalSince1970: TimeInterval(after))))
        // Local times from a few hours back: within a repeated hour the local clock reads
        // earlier than it did before; every candidate is then checked against `after` itself.
        let earliestLocal = localStart - 4 * 3600
        let firstDay = Self.floorDiv(earliestLocal, 86_400)
        for offset in 0..<Int64(366 * 8 + 1) {
            let dayNumber = firstDay + offset
            let (_, month, dayOfMonth) = ISO8601.civilDate(daysSinceEpoch: Int(dayNumber))
            guard months.contains(month), matches(day: dayOfMonth, weekday: Self.weekday(fromDays: dayNumber)) else {
                continue
            }
            for hour in hours {
                for minute in minutes {
                    let local = dayNumber * 86_400 + Int64(hour * 3600 + minute * 60)
                    if local < earliestLocal { continue }
                    if let instant = Self.instant(local: local, in: zone), instant > after {
                        return Date(timeIntervalSince1970: TimeInterval(instant))
                    }
                }
            }
        }
        return nil
    }

    /// The next `count` occurrences after `date`.
    public func next(_ count: Int, after date: Date, in zone: TimeZone) -> [Date] {
        var dates: [Date] = []
        var cursor = date
        while dates.count < count, let next = next(after: cursor, in: zone) {
            dates.append(next)
            cursor = next
        }
        return dates
    }

    /// The instant a local wall-clock time (seconds since 1970 as if the zone were UTC) happens:
    /// the earlier one when the time repeats, the first instant after the gap when it is skipped.
    static func instant(local: Int64, in zone: TimeZone) -> Int64? {
        func offset(_ instant: Int64) -> Int64 {
            Int64(zone.secondsFromGMT(for: Date(timeIntervalSince1970: TimeInterval(instant))))
        }
        // Offsets a day either side cover any transition near this time.
        let before = offset(local - 86_400)
        let afterward = offset(local + 86_400)
        let candidates = Set([local - before, local - afterward]).filter { $0 + offset($0) == local }
        if let earliest = candidates.min() { return earliest }
        // Skipped: the gap starts where the offset changes; find that instant between the two
        // readings of the local time.
        var low = min(local - before, local - afterward)
        var high = max(local - before, local - afterward)
        let lowOffset = offset(low)
        guard offset(high) != lowOffset else { return nil }
        while high - low > 1 {
            let middle = low + (high - low) / 2
            if offset(middle) == lowOffset { low = middle } else { high = middle }
        }
        return high
    }

    static func floorDiv(_ a: Int64, _ b: Int64) -> Int64 { a >= 0 ? a / b : -((-a + b - 1) / b) }

    /// 0 (Sunday) to 6 for a day number; 1970-01-01 was a Thursday.
    static func weekday(fromDays days: Int64) -> Int { Int(((days % 7) + 11) % 7) }
}
