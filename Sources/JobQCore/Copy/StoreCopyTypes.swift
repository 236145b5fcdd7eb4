import Foundation

/// How ``JobQueue/copy(to:options:progress:)`` copies a store.
///
/// ```swift
/// let report = try await source.copy(to: destination, options: StoreCopyOptions(allowLiveWorkers: true))
/// ```
public struct StoreCopyOptions: Sendable {
    /// Copy even though workers are live on the source (a heartbeat within the last 30 seconds).
    /// Off by default: jobs they finish during the copy would be copied as they were, and run
    /// again on the destination.
    public var allowLiveWorkers: Bool
    /// Rows written per destination transaction: what a copy killed midway redoes at most.
    public var rowsPerTransaction: Int

    public init(allowLiveWorkers: Bool = false, rowsPerTransaction: Int = 2_000) {
        self.allowLiveWorkers = allowLiveWorkers
        self.rowsPerTransaction = max(1, rowsPerTransaction)
    }
}

/// Where a copy stands: rows of `table` written so far, of `total`.
///
/// ```swift
/// _ = try await source.copy(to: destination) { progress in
///     print("\(progress.table): \(progress.copied)/\(progress.total)")
/// }
/// ```
public struct StoreCopyProgress: Sendable, Equatable {
    /// The table being copied (`jobs`, `events`...).
    public let table: String
    /// Its rows in the destination so far, those of an earlier run of the same copy included.
    public let copied: Int
    /// Its rows in the source.
    public let total: Int

    package init(table: String, copied: Int, total: Int) {
        self.table = table
        self.copied = copied
        self.total = total
    }
}

/// What a copy did, and the check that ends it: each table's rows counted and checksummed on
/// both sides.
///
/// ```swift
/// let report = try await source.copy(to: destination)
/// for table in report.tables where !table.matches { print("\(table.name) differs") }
/// ```
public struct StoreCopyReport: Sendable {
    /// One table on both sides.
    public struct Table: Sendable, Equatable {
        /// The table's name without jobq's prefix; `events` counts the event feed (on SQLite,
        /// `enqueued` events are kept in the jobs' rows and counted here).
        public let name: String
        public let sourceRows: Int
        public let destinationRows: Int
        /// A 128-bit checksum of every row's copied columns, as a set (for events: in the
        /// feed's order, without their ids, which may differ), in hexadecimal.
        public let sourceChecksum: String
        public let destinationChecksum: String

        /// Whether both sides hold the same rows.
        public var matches: Bool { sourceRows == destinationRows && sourceChecksum == destinationChecksum }

        package init(
            name: String, sourceRows: Int, destinationRows: Int, sourceChecksum: String, destinationChecksum: String
        ) {
            self.name = name
            self.sourceRows = sourceRows
            self.destinationRows = destinationRows
            self.sourceChecksum = sourceChecksum
            self.destinationChecksum = destinationChecksum
        }
    }

    /// Every table copied, in the order copied.
    public let tables: [Table]
    /// Whether this run went on with a copy an earlier run had begun.
    public let resumed: Bool
    /// How event ids map from the source to the destination: what a follower's cursor becomes.
    public let eventIDs: EventIDMapping
    /// Payload indexes created on the destination (`jobq index`), by JSON pointer.
    public let payloadIndexes: [String]

    /// Whether every table matches on both sides.
    public var verified: Bool { tables.allSatisfy(\.matches) }

    package init(tables: [Table], resumed: Bool, eventIDs: EventIDMapping, payloadIndexes: [String]) {
        self.tables = tables
        self.resumed = resumed
        self.eventIDs = eventIDs
        self.payloadIndexes = payloadIndexes
    }
}

/// How a copy numbered the events: kept as they were, or renumbered where the destination's
/// feed needed it (a PostgreSQL feed copied to SQLite, whose feed runs in id order, where
/// PostgreSQL's runs in commit order).
///
/// ```swift
/// let cursor = report.eventIDs.cursor(afterSourceCursor: savedCursor)
/// ```
public struct EventIDMapping: Sendable, Equatable {
    /// Source ids whose event has another id on the destination, with that id, in feed order.
    /// Empty when every id was kept.
    public let renumbered: [(source: Int64, destination: Int64)]
    /// The newest event copied: its id on the source and on the destination (0 with no events).
    public let newestSource: Int64
    public let newestDestination: Int64

    /// Whether every event kept its id: a follower's cursor carries over as it is.
    public var idsKept: Bool { renumbered.isEmpty }

    /// The destination's cursor for a follower that had read the source up to `cursor` (an
    /// event id of the source): the same id unless that event was renumbered.
    public func cursor(afterSourceCursor cursor: Int64) -> Int64 {
        renumbered.first(where: { $0.source == cursor })?.destination ?? cursor
    }

    package init(renumbered: [(source: Int64, destination: Int64)], newestSource: Int64, newestDestination: Int64) {
        self.renumbered = renumbered
        self.newestSource = newestSource
        self.newestDestination = newestDestination
    }

    public static func == (lhs: EventIDMapping, rhs: EventIDMapping) -> Bool {
        lhs.newestSource == rhs.newestSource && lhs.newestDestination == rhs.newestDestination
            && lhs.renumbered.elementsEqual(rhs.renumbered) {
                $0.source == $1.source && $0.destination == $1.destination
            }
    }
}

/// What a store records of the copy that filled it (``JobQueue/copyRecord()``).
///
/// ```swift
/// if let record = try await queue.copyRecord(), let through = record.renumberedThrough, cursor <= through {
///     print("this cursor may come from the store copied: translate it first")
/// }
/// ```
public struct StoreCopyRecord: Sendable, Equatable {
    /// When the copy ended (its check passed).
    public let finishedAt: Date
    /// The newest event the copy renumbered, as an id here; nil when every event kept its id.
    /// A follower's cursor saved on the source store up to this id must be translated
    /// (``EventIDMapping/cursor(afterSourceCursor:)``, `jobq copy --event-map`).
    public let renumberedThrough: Int64?

    package init(finishedAt: Date, renumberedThrough: Int64?) {
        self.finishedAt = finishedAt
        self.renumberedThrough = renumberedThrough
    }
}
