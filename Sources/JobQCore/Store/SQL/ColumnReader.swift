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
