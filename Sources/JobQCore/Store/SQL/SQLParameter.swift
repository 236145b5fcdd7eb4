/// A statement's parameter by name: a case of an enum whose raw value is the parameter's number.
/// A statement declares its parameters once, writes them into its text by name, and binds them
/// by name, so that no number is written twice and none can drift from its value:
///
/// ```swift
/// enum Advance: Int32, SQLParameter { case jobs = 1, tree }
/// let sql = "UPDATE trees SET jobs = jobs + \(Advance.jobs) WHERE id = \(Advance.tree)"
/// statement.bind(Advance.jobs, 3)
/// ```
///
/// In the text a parameter is SQLite's `?NNN`; PostgreSQL's store renumbers them as `$N`.
package protocol SQLParameter: RawRepresentable, CustomStringConvertible, Sendable where RawValue == Int32 {}

extension SQLParameter {
    /// The parameter as written in a statement's text: `?3`.
    package var description: String { "?\(rawValue)" }
}

extension SQLStatement {
    package func bind(_ parameter: some SQLParameter, _ value: Int64) { bind(parameter.rawValue, value) }
    package func bind(_ parameter: some SQLParameter, _ value: Int) { bind(parameter.rawValue, value) }
    package func bind(_ parameter: some SQLParameter, _ value: Double) { bind(parameter.rawValue, value) }
    package func bind(_ parameter: some SQLParameter, _ value: Double?) { bind(parameter.rawValue, value) }
    package func bind(_ parameter: some SQLParameter, _ value: Int64?) { bind(parameter.rawValue, value) }
    package func bind(_ parameter: some SQLParameter, _ value: String?) { bind(parameter.rawValue, value) }
}

extension SQLArguments {
    /// Arguments for a statement whose parameters are named: each value at its parameter's
    /// number. Every parameter of `P` must be given once.
    package init<P: SQLParameter & CaseIterable>(_ values: KeyValuePairs<P, (any SQLBindable)?>) {
        var ordered = [SQLValue](repeating: .null, count: P.allCases.count)
        var given = Set<Int32>()
        for (parameter, value) in values {
            precondition(given.insert(parameter.rawValue).inserted, "\(parameter) given twice")
            ordered[Int(parameter.rawValue) - 1] = value?.sqlValue ?? .null
        }
        precondition(given.count == ordered.count, "every parameter of \(P.self) is given")
        self.init(ordered)
    }
}
