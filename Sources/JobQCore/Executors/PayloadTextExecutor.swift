/// An executor that runs the payloads it knows the shape of on their JSON text, without
/// Foundation's coders; any other payload takes the typed path (``Executor/run(_:context:)``),
/// with its results and its errors.
///
/// Why: for an executor whose work is an addition, `JSONDecoder` and `JSONEncoder` were the
/// attempt's largest cost (about 3 us of a drain's 19 us of CPU per job, `Performance.md`),
/// several times what a user's executor with plain `Int` fields pays. The built-in executors
/// should cost no more than a user's would.
///
/// A conformance must give, for every payload it answers, the text the typed path's output
/// encodes to (``JSONEncoder/jobq``): the pool runs one or the other, and a test holds them to
/// the same answers.
protocol PayloadTextExecutor: Executor {
    /// The output's JSON text for `payload`, or nil to leave the payload to the typed path.
    func outputText(forPayload payload: String, context: JobContext) -> String?
}

extension SumExecutor: PayloadTextExecutor {
    /// `{"a": 1, "b": 2}` with whole numbers that fit in 64 bits and do not overflow when added;
    /// everything else (fractions, strings, missing or repeated keys, an overflow) is the typed
    /// path's, which says what is wrong.
    func outputText(forPayload payload: String, context: JobContext) -> String? {
        guard case .object(let members)? = try? OrderedJSON.parse(payload) else { return nil }
        var a: Int64?
        var b: Int64?
        for member in members {
            switch member.key {
            case "a":
                guard a == nil, let value = Self.wholeNumber(member.value) else { return nil }
                a = value
            case "b":
                guard b == nil, let value = Self.wholeNumber(member.value) else { return nil }
                b = value
            default:
                continue
            }
        }
        guard let a, let b else { return nil }
        let (sum, overflow) = a.addingReportingOverflow(b)
        guard !overflow else { return nil }
        return #"{"sum":\#(sum)}"#
    }

    /// A number written as a 64-bit integer is written canonically (no `-0`, no exponent).
    private static func wholeNumber(_ value: OrderedJSON) -> Int64? {
        guard case .number(let text) = value, let number = Int64(text), String(number) == text else { return nil }
        return number
    }
}
