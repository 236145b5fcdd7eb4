import JobQCore

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
/// Arguments given as an array (`fetchRows(sql:arguments:)`) go in the order of the numbers.
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
