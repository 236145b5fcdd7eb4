import GRDB
import JobQCore

extension SQLiteStore {
    /// The SQL functions jobq's statements call on SQLite, added to each of its connections:
    /// `jobq_number_order(a, b)`, -1, 0 or 1 as the JSON number `a` is below, equal to or above
    /// `b`, exactly (``JSONNumber``), NULL when either is not one. Filters compare payload numbers
    /// by it, as PostgreSQL compares them as `numeric`.
    ///
    /// ```sql
    /// SELECT id FROM jobq_jobs WHERE jobq_number_order(payload -> '$."amount"', '1e30') > 0
    /// ```
    static func addFunctions(_ db: Database) {
        db.add(function: numberOrder)
    }

    private static let numberOrder = DatabaseFunction("jobq_number_order", argumentCount: 2, pure: true) { values in
        guard let a = String.fromDatabaseValue(values[0]), let b = String.fromDatabaseValue(values[1]) else {
            return nil
        }
        return JSONNumber.compare(a, b)
    }
}
