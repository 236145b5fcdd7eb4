import Foundation

/// What a store on PostgreSQL holds in the database besides its schema's tables: the advisory
/// lock keys its writes and its migrations take, and the channels its commits notify. Each is
/// the store's own, so that two stores in two schemas of one database neither wait for each
/// other's locks nor wake each other's workers.
///
/// The default schema (`jobq`) keeps the values every store had before schemas were separate,
/// so that a worker of the previous release still running beside an upgraded one takes the
/// same lock; any other schema's are derived from its name (64-bit FNV-1a, so that a collision
/// between two schemas of one database is not a practical concern).
///
/// The hot path's statements are texts fixed at compile time, shared by every store: they name
/// the lock and the channels through the store's functions `jobq_write_lock_key()`,
/// `jobq_work_channel()` and `jobq_events_channel()` (PostgreSQL migration 12), which the
/// migrator makes with these values and which PostgreSQL folds into constants when it plans.
///
/// ```swift
/// SchemaNames.shared("jobq").workChannel     // "jobq_work"
/// SchemaNames.shared("tenant_b").workChannel // "jobq_work_" + 16 hex digits
/// ```
extension SchemaNames {
    /// The key of the transaction-level advisory lock every write of the store holds ("jobe" in
    /// ASCII for the default schema).
    package var writeLockKey: Int64 {
        isDefault ? 0x6A6F_6265 : Self.derived("write lock", schema)
    }

    /// The key of the session-level advisory lock its migrations hold ("jobq" in ASCII for the
    /// default schema).
    package var migrationLockKey: Int64 {
        isDefault ? 0x6A6F_6271 : Self.derived("migration lock", schema)
    }

    /// The channel of commits that may have made work claimable, or finished jobs.
    package var workChannel: String {
        isDefault ? "jobq_work" : "jobq_work_" + Self.hex(Self.derived("channel", schema))
    }

    /// The channel of commits that wrote events.
    package var eventsChannel: String {
        isDefault ? "jobq_events" : "jobq_events_" + Self.hex(Self.derived("channel", schema))
    }

    /// Whether this is the schema jobq uses unless told otherwise.
    var isDefault: Bool { schema == PostgresSettings.defaultSchema }

    /// The values the migrator writes into a migration's text in place of `@JOBQ_NAME@`.
    var migrationValues: [String: String] {
        [
            "@JOBQ_WRITE_LOCK_KEY@": String(writeLockKey),
            "@JOBQ_WORK_CHANNEL@": workChannel,
            "@JOBQ_EVENTS_CHANNEL@": eventsChannel
        ]
    }

    /// 64-bit FNV-1a of `purpose`, a NUL, and `schema`'s UTF-8 bytes.
    private static func derived(_ purpose: String, _ schema: String) -> Int64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in Array(purpose.utf8) + [0] + Array(schema.utf8) {
            hash ^= UInt64(byte)
            hash &*= 0x0000_0100_0000_01B3
        }
        return Int64(bitPattern: hash)
    }

    private static func hex(_ value: Int64) -> String {
        let digits = String(UInt64(bitPattern: value), radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }
}
