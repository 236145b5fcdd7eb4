import Foundation

/// The executors the `jobq` command line runs: `shell`, `sleep`, `sum`, `echo` and `fail`.
/// Register them in your own pool too:
///
/// ```swift
/// let pool = WorkerPool(queue: queue, executors: BuiltinExecutors.all + [MyExecutor()])
/// ```
public enum BuiltinExecutors {
    public static var all: [any Executor] {
        [ShellExecutor(), SleepExecutor(), SumExecutor(), EchoExecutor(), FailExecutor()]
    }

    /// The names of ``all``.
    public static var names: [String] {
        [ShellExecutor.name, SleepExecutor.name, SumExecutor.name, EchoExecutor.name, FailExecutor.name]
    }
}

/// `sleep`: waits `seconds` (cancellable), then returns `{"slept": seconds}`.
public struct SleepExecutor: Executor {
    public static let name = "sleep"
    public struct Input: Codable, Sendable {
        public var seconds: Double
        public init(seconds: Double) { self.seconds = seconds }
    }
    public struct Output: Codable, Sendable { public var slept: Double }

    public init() {}

    public func run(_ input: Input, context: JobContext) async throws -> Output {
        guard input.seconds.isFinite, input.seconds >= 0, input.seconds <= DurationParser.maximumSeconds else {
            throw NonRetryableError(
                "'seconds' must be a number from 0 to \(Int(DurationParser.maximumSeconds)), got \(input.seconds)")
        }
        try await Task.sleep(for: .milliseconds(Int64(input.seconds * 1000)))
        return Output(slept: input.seconds)
    }
}

/// `sum`: `{"a": 1, "b": 2}` gives `{"sum": 3}`. Whole numbers stay whole; an overflow of
/// 64-bit integers is refused rather than wrapped.
public struct SumExecutor: Executor {
    public static let name = "sum"
    public struct Input: Codable, Sendable {
        public var a: JSONValue
        public var b: JSONValue
        public init(a: Int, b: Int) {
            self.a = .integer(Int64(a))
            self.b = .integer(Int64(b))
        }

        private enum CodingKeys: String, CodingKey { case a, b }

        // Numbers first: decoding JSONValue tries each JSON type in turn, and every miss builds an
        // error, which dominates the cost of this tiny executor.
        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            func number(_ key: CodingKeys) throws -> JSONValue {
                if let value = try? container.decode(Int64.self, forKey: key) { return .integer(value) }
                return try container.decode(JSONValue.self, forKey: key)
            }
            a = try number(.a)
            b = try number(.b)
        }
    }
    public struct Output: Codable, Sendable { public var sum: JSONValue }

    public init() {}

    public func run(_ input: Input, context: JobContext) async throws -> Output {
        switch (input.a, input.b) {
        case (.integer(let a), .integer(let b)):
            let (sum, overflow) = a.addingReportingOverflow(b)
            if overflow { throw NonRetryableError("\(a) + \(b) overflows a 64-bit integer") }
            return Output(sum: .integer(sum))
        case (.integer, .number), (.number, .integer), (.number, .number):
            return Output(sum: .number(Self.double(input.a) + Self.double(input.b)))
        default:
            throw NonRetryableError("'a' and 'b' must both be numbers, e.g. {\"a\": 1, \"b\": 2}")
        }
    }

    private static func double(_ value: JSONValue) -> Double {
        switch value {
        case .integer(let value): return Double(value)
        case .number(let value): return value
        default: return .nan
        }
    }
}

/// `echo`: returns its payload.
public struct EchoExecutor: Executor {
    public static let name = "echo"
    public init() {}
    public func run(_ input: JSONValue, context: JobContext) async throws -> JSONValue { input }
}

/// `fail`: fails with `message`, for trying out retries and dead jobs. With
/// `succeedFromAttempt: N` it fails attempts before N and succeeds from attempt N on.
public struct FailExecutor: Executor {
    public static let name = "fail"
    public struct Input: Codable, Sendable {
        public var message: String?
        public var succeedFromAttempt: Int?
        public init(message: String? = nil, succeedFromAttempt: Int? = nil) {
            self.message = message
            self.succeedFromAttempt = succeedFromAttempt
        }
    }
    public struct Output: Codable, Sendable { public var attempt: Int }

    public init() {}

    public func run(_ input: Input, context: JobContext) async throws -> Output {
        if let from = input.succeedFromAttempt, context.attempt >= from {
            return Output(attempt: context.attempt)
        }
        throw ExecutorFailure(input.message ?? "failed on purpose (attempt \(context.attempt))")
    }
}

/// A plain failure with a message; the retry policy applies.
public struct ExecutorFailure: Error, Sendable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
