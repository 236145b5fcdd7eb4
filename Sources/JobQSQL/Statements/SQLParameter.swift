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

extension SQLParameter where Self: CaseIterable {
    /// A statement's arguments, each of its parameters set once by name, for the statements
    /// run with an arguments array (`execute(sql:arguments:)`, `fetchRows`):
    ///
    /// ```swift
    /// try db.execute(sql: "UPDATE trees SET jobs = \(Advance.jobs) WHERE id = \(Advance.tree)",
    ///                arguments: Advance.arguments([.jobs: 3, .tree: id]))
    /// ```
    package static func arguments(_ values: KeyValuePairs<Self, (any SQLBindable)?>) -> SQLArguments {
        var arguments = [SQLValue](repeating: .null, count: allCases.count)
        var set = Set<Int32>()
        for (parameter, value) in values {
            arguments[Int(parameter.rawValue) - 1] = value?.sqlValue ?? .null
            set.insert(parameter.rawValue)
        }
        precondition(
            set.count == allCases.count && values.count == set.count, "set each parameter of \(Self.self) once")
        return SQLArguments(arguments)
    }
}
