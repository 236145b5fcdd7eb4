import Foundation
import JobQCore

/// One numbered SQL file from the package's `Migrations/` folder (or `Migrations/postgres/` for
/// the PostgreSQL store), compiled into the binary.
package struct SchemaMigration: Sendable {
    package let version: Int
    package let name: String
    package let sql: String
    /// The SHA-256 of `sql`, computed once: every open of a store compares the checksums of the
    /// migrations it applied, and a process opens many stores.
    package let checksum: String

    package init(version: Int, name: String, sql: String) {
        self.version = version
        self.name = name
        self.sql = sql
        self.checksum = SHA256.hex(sql)
    }

    /// Embedded files named `NNNN_name.sql`, as migrations in order.
    package static func numbered(_ files: [(name: String, sql: String)]) -> [SchemaMigration] {
        files.map { file in
            let stem = file.name.hasSuffix(".sql") ? String(file.name.dropLast(4)) : file.name
            guard let version = Int(stem.prefix { $0.isNumber }) else {
                preconditionFailure("migration file \(file.name) must start with its number, e.g. 0002_add_events.sql")
            }
            return SchemaMigration(version: version, name: file.name, sql: file.sql)
        }
    }
}
