import Foundation

/// Which jobs an operator means, written as terms that must all hold: a job's fields and
/// members of its payload, the same language in the Swift API, `jobq list --where` and the
/// dashboard's search box.
///
/// ```swift
/// let filter = try JobFilter(#"state:dead executor:mail /customer = "acme" finished<24h"#)
/// let jobs = try await queue.jobs(where: filter)
/// let howMany = try await queue.count(where: filter)
/// ```
///
/// Terms, separated by spaces:
/// - `state:dead`, `state:dead,cancelled` (any of), and likewise `queue:`, `executor:`,
///   `name:`, `partition:`, `lane:`, `batch:`, `unique:`, `error:`, and `awaiting:` (the signal
///   a durable function is parked waiting for); a value with spaces in double quotes
///   (`name:"nightly report"`).
/// - `error~timeout`: the text contains `timeout` (case matters); also for the other text
///   fields but `state`.
/// - `attempt>1`, `priority>=5`, `id<1000`, `workflow:42`: whole-number fields with `:` (any of
///   a list), `=`, `<`, `<=`, `>`, `>=`.
/// - `finished<24h`: finished less than 24 hours ago; `created>7d`: created more than 7 days
///   ago; `run>=2026-11-01` or `started<2026-11-01T12:00:00Z`: compared with that time (a date
///   alone is midnight UTC). Time fields: `created`, `run`, `started`, `finished`, `expires`.
///   A job without that time (never started) matches no such term.
/// - `/customer = "acme"`, `/amount > 100`, `/vip = true`, `/note = null`, `/coupon exists`:
///   a payload member by JSON pointer (object members only, as partitions take them),
///   compared as JSON: a string matches only a string, a number only a number. `<` and `>`
///   order numbers, and strings by their bytes. `!=` matches every job whose member is not
///   that value, jobs without the member included.
/// - A `-` before any term matches the jobs it does not: `-state:succeeded`.
///
/// The store evaluates a filter in SQL, with every value bound as a parameter.
public struct JobFilter: Sendable, Hashable, CustomStringConvertible {
    /// The text the filter was read from (terms joined by one space when filters are combined).
    public let expression: String
    package let terms: [Term]

    /// Every job: the filter with no terms.
    public static let all = JobFilter(expression: "", terms: [])

    /// The longest expression read, in characters: a filter is typed by a person.
    public static let maximumLength = 4096
    /// The most terms one filter holds (each is a condition in the store's query).
    public static let maximumTerms = 64

    /// Reads `expression`.
    ///
    /// - Throws: ``JobQueueError/invalidInput(_:)`` naming the position where reading stopped
    ///   and what was expected there; nothing is read from the store.
    public init(_ expression: String) throws(JobQueueError) {
        guard !expression.contains("\u{0}") else {
            throw .invalidInput("invalid filter: it holds NUL (U+0000), which no stored text holds; leave it out")
        }
        self.expression = expression
        var parser = JobFilterParser(expression)
        self.terms = try parser.parse()
    }

    package init(expression: String, terms: [Term]) {
        self.expression = expression
        self.terms = terms
    }

    /// The jobs both filters match.
    ///
    /// ```swift
    /// let deadMail = try JobFilter("state:dead").and(JobFilter("executor:mail"))
    /// ```
    public func and(_ other: JobFilter) throws(JobQueueError) -> JobFilter {
        guard terms.count + other.terms.count <= Self.maximumTerms else {
            throw .invalidInput("a filter holds at most \(Self.maximumTerms) terms; narrow it with fewer")
        }
        let joined = [expression, other.expression].filter { !$0.isEmpty }.joined(separator: " ")
        return JobFilter(expression: joined, terms: terms + other.terms)
    }

    public var description: String { expression }

    /// The jobs this filter matches up to job `id`: what an action confirmed at one moment acts
    /// on, whatever was enqueued after. jobq's own term, beside the caller's (who may have used
    /// all ``maximumTerms``).
    package func through(_ id: JobID) -> JobFilter {
        JobFilter(
            expression: expression,
            terms: terms + [.init(negated: false, condition: .integerCompare(.id, .lessOrEqual, id))])
    }

    /// One condition of a filter.
    package struct Term: Sendable, Hashable {
        /// Whether the term matches the jobs its condition does not (`-` in front).
        package var negated: Bool
        package var condition: Condition
    }

    package enum Condition: Sendable, Hashable {
        /// The text field is one of the values.
        case textIn(TextField, [String])
        /// The text field contains the value.
        case textContains(TextField, String)
        /// The whole-number field is one of the values.
        case integerIn(IntegerField, [Int64])
        case integerCompare(IntegerField, Order, Int64)
        case timeCompare(TimeField, Order, Date)
        /// The time field's age compared with a duration: `finished<24h` is an age below a day.
        case ageCompare(TimeField, Order, Duration)
        case payloadExists(PayloadPointer)
        case payloadEquals(PayloadPointer, JSONScalar)
        case payloadCompare(PayloadPointer, Order, JSONScalar)
    }

    package enum Order: String, Sendable, Hashable {
        case less = "<"
        case lessOrEqual = "<="
        case greater = ">"
        case greaterOrEqual = ">="
        case equal = "="
    }

    /// A JSON value a payload member is compared with.
    package enum JSONScalar: Sendable, Hashable {
        case string(String)
        /// The number's text as written (valid JSON), compared exactly where the store can.
        case number(String)
        case bool(Bool)
        case null
    }

    package enum TextField: String, Sendable, Hashable, CaseIterable {
        case state, queue, executor, name, partition, lane, batch, unique, error
        /// The signal a durable function is parked waiting for (none for any other job).
        case awaiting
    }

    package enum IntegerField: String, Sendable, Hashable, CaseIterable {
        case id, attempt, priority, workflow
    }

    package enum TimeField: String, Sendable, Hashable, CaseIterable {
        case created, run, started, finished, expires
    }
}
