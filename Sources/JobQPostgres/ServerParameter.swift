import JobQCore
import JobQSQL

/// A named parameter of one of PostgreSQL's own statements (the hot path's, which commit on
/// their own): written `$N` in the statement's text and set by name in its
/// ``ServerArguments``, so that a statement's text and its values cannot drift apart. Its
/// cases number the parameters 1, 2, 3... in order.
///
/// ```swift
/// enum Promote: Int32, ServerParameter { case now = 1 }
/// let sql = "UPDATE jobq_jobs SET state = 'ready' WHERE run_at <= CAST(\(Promote.now) AS double precision)"
/// var arguments = ServerArguments<Promote>()
/// arguments[.now] = .real(StoreSQL.now())
/// ```
protocol ServerParameter: CaseIterable, RawRepresentable, CustomStringConvertible, Sendable where RawValue == Int32 {}

extension ServerParameter {
    var description: String { "$\(rawValue)" }
}

/// The values of a statement's ``ServerParameter``s, NULL until set.
struct ServerArguments<Parameter: ServerParameter> {
    private(set) var values: [SQLValue]

    init() {
        values = Array(repeating: .null, count: Parameter.allCases.count)
    }

    subscript(_ parameter: Parameter) -> SQLValue {
        get { values[Int(parameter.rawValue) - 1] }
        set { values[Int(parameter.rawValue) - 1] = newValue }
    }
}
