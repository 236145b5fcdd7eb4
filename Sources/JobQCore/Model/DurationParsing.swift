/// Parses durations as users type them on a command line: a number and a unit.
///
/// Units: `ms`, `s`, `m`, `h`, `d`. The number may have a fraction (`1.5s`). Several parts
/// may be joined (`1h30m`). A bare number is refused, because "5" could mean any unit.
///
/// ```swift
/// let lease = try DurationParser.parse("30s")      // .seconds(30)
/// let delay = try DurationParser.parse("1h30m")    // .seconds(5400)
/// ```
public enum DurationParser {
    /// The longest duration accepted: 100 years, so that no sum overflows.
    public static let maximumSeconds: Double = 100 * 365 * 86_400

    public static func parse(_ text: String) throws(JobQueueError) -> Duration {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        func bad(_ why: String) -> JobQueueError {
            .invalidInput("invalid duration '\(text)': \(why); use a number and a unit, e.g. 500ms, 30s, 5m, 2h, 7d")
        }
        guard !trimmed.isEmpty else { throw bad("it is empty") }
        var total = 0.0
        var rest = Substring(trimmed)
        while !rest.isEmpty {
            let number = rest.prefix { $0.isASCII && ($0.isNumber || $0 == ".") }
            guard !number.isEmpty else { throw bad("expected a number at '\(rest)'") }
            guard number.filter({ $0 == "." }).count <= 1, number != ".", let value = Double(number) else {
                throw bad("'\(number)' is not a number")
            }
            rest = rest.dropFirst(number.count)
            let unit = rest.prefix { $0.isASCII && $0.isLetter }
            rest = rest.dropFirst(unit.count)
            let scale: Double
            switch unit {
            case "ms": scale = 0.001
            case "s": scale = 1
            case "m": scale = 60
            case "h": scale = 3600
            case "d": scale = 86_400
            case "": throw bad("'\(number)' has no unit")
            default: throw bad("unknown unit '\(unit)'")
            }
            total += value * scale
            guard total <= maximumSeconds else { throw bad("it is longer than 100 years") }
        }
        return .milliseconds(Int64((total * 1000).rounded()))
    }

    /// Throws unless `duration` is positive and at most ``maximumSeconds`` (100 years): what
    /// every duration jobq stores must be, however it enters (the API, a flag, a file).
    static func checkStorable(_ duration: Duration, what: String) throws(JobQueueError) {
        let seconds = duration.inSeconds
        guard seconds > 0 else { throw .invalidInput("\(what) must be positive, got \(format(duration))") }
        guard seconds <= maximumSeconds else {
            throw .invalidInput("\(what) must be at most 100 years, got \(format(duration))")
        }
    }

    /// Formats a duration the way ``parse(_:)`` reads it back, e.g. `1.5s`, `250ms`, `2h`.
    public static func format(_ duration: Duration) -> String {
        let seconds = duration.inSeconds
        // Beyond what `parse` accepts (a value stored by hand): said in days, never trapping.
        guard abs(seconds) <= maximumSeconds else { return "\((seconds / 86_400).rounded())d" }
        if seconds < 1 { return "\(Int((seconds * 1000).rounded()))ms" }
        for (unit, scale) in [("d", 86_400.0), ("h", 3600.0), ("m", 60.0)]
        where seconds >= scale && seconds.truncatingRemainder(dividingBy: scale) == 0 {
            return "\(Int(seconds / scale))\(unit)"
        }
        return seconds == seconds.rounded() ? "\(Int(seconds))s" : "\(seconds)s"
    }
}
