import JobQCore

extension SharedSQL {
    /// `INSERT INTO table (column, ...) VALUES (value, ...)` from one list of columns with
    /// their values, so that a column and its value are written side by side.
    package static func insertSQL(
        _ table: String, _ values: KeyValuePairs<String, String>, returning: String? = nil
    ) -> String {
        let columns = values.map(\.key).joined(separator: ", ")
        let row = values.map(\.value).joined(separator: ", ")
        return "INSERT INTO \(table) (\(columns)) VALUES (\(row))" + (returning.map { " RETURNING \($0)" } ?? "")
    }
}
