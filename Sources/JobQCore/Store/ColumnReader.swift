/// Reads the current result row by column index: a stepped statement on the hot path (SQLite's
/// `RawStatement`), a fetched row elsewhere, so that each model type has one row reader.
package protocol ColumnReader {
    func int64(_ column: Int32) -> Int64
    func double(_ column: Int32) -> Double
    func optionalDouble(_ column: Int32) -> Double?
    func optionalString(_ column: Int32) -> String?
    func optionalInt64(_ column: Int32) -> Int64?
}

extension ColumnReader {
    package func int(_ column: Int32) -> Int { Int(int64(column)) }
    package func string(_ column: Int32) -> String { optionalString(column) ?? "" }
}

/// The columns a row type reads, in the order a query selects them: one list that gives both
/// the query's column list (``list``) and each column's index as the reader reads it.
///
/// ```swift
/// enum TreeColumn: Int32, SQLColumns { case id, maxJobs }   // "id, max_jobs"
/// let maxJobs = row.int(TreeColumn.maxJobs)
/// ```
///
/// A case's column name is its name in snake case (`maxJobs` is `max_jobs`, `workflowID` is
/// `workflow_id`).
package protocol SQLColumns: RawRepresentable, CaseIterable, Sendable where RawValue == Int32 {}

extension SQLColumns {
    /// The column's name in the table.
    package var name: String {
        var name = ""
        var previousWasLower = false
        for character in String(describing: self) {
            if character.isUppercase {
                if previousWasLower { name.append("_") }
                name.append(contentsOf: character.lowercased())
                previousWasLower = false
            } else {
                name.append(character)
                previousWasLower = true
            }
        }
        return name
    }

    /// The columns, in order, to paste into a SELECT or RETURNING.
    package static var list: String { allCases.map(\.name).joined(separator: ", ") }

    /// How many columns there are: the index of the first column a query selects after them.
    package static var count: Int32 { Int32(allCases.count) }
}

extension ColumnReader {
    package func int64(_ column: some SQLColumns) -> Int64 { int64(column.rawValue) }
    package func int(_ column: some SQLColumns) -> Int { int(column.rawValue) }
    package func double(_ column: some SQLColumns) -> Double { double(column.rawValue) }
    package func string(_ column: some SQLColumns) -> String { string(column.rawValue) }
    package func optionalDouble(_ column: some SQLColumns) -> Double? { optionalDouble(column.rawValue) }
    package func optionalString(_ column: some SQLColumns) -> String? { optionalString(column.rawValue) }
    package func optionalInt64(_ column: some SQLColumns) -> Int64? { optionalInt64(column.rawValue) }
}
