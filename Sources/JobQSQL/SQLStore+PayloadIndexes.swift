import Foundation
import JobQCore

/// Expression indexes on payload members that an operator adds (`jobq index add /customer`),
/// so that filters on a member (``FilterSQL``) look jobs up instead of reading each one. Each is
/// recorded in jobq_payload_indexes with the name of its index.
extension SQLStore {
    package func addPayloadIndex(_ text: String) async throws -> PayloadIndex {
        let pointer = try PayloadPointer(text)
        let name = Self.indexName(text)
        let now = StoreSQL.now()
        return try await write { db in
            if let existing = try Self.payloadIndex(db, text) { return existing }
            // Not CONCURRENTLY: it holds the jobs' writes while it builds (seconds per million
            // jobs), as the docs say; a transaction can then record it with the index.
            try db.execute(
                sql: "CREATE INDEX \(name) ON jobq_jobs (\(FilterSQL.memberText(pointer, db.dialect)))")
            try db.execute(
                sql: "INSERT INTO jobq_payload_indexes (pointer, index_name, created_at) VALUES (?, ?, ?)",
                arguments: [text, name, now])
            return PayloadIndex(pointer: text, createdAt: Date(timeIntervalSince1970: now))
        }
    }

    package func removePayloadIndex(_ text: String) async throws {
        // The name is the pointer's: known before the transaction, as the store qualifies it.
        let reference = indexReference(Self.indexName(text))
        try await write { db in
            guard try Self.payloadIndex(db, text) != nil else {
                throw JobQueueError.notFound(
                    "no index on the payload member \(JSONText.preview(text)); list them with `jobq index list`")
            }
            try db.execute(sql: "DROP INDEX \(reference)")
            try db.execute(sql: "DELETE FROM jobq_payload_indexes WHERE pointer = ?", arguments: [text])
        }
    }

    package func payloadIndexes() async throws -> [PayloadIndex] {
        try await read { db in
            try db.fetchRows(sql: "SELECT pointer, created_at FROM jobq_payload_indexes ORDER BY pointer").map {
                PayloadIndex(pointer: $0.string(0), createdAt: Date(timeIntervalSince1970: $0.double(1)))
            }
        }
    }

    private static func payloadIndex(_ db: some SQLTransaction, _ text: String) throws -> PayloadIndex? {
        try db.fetchRows(
            sql: "SELECT pointer, created_at FROM jobq_payload_indexes WHERE pointer = ?", arguments: [text]
        )
        .first.map { PayloadIndex(pointer: $0.string(0), createdAt: Date(timeIntervalSince1970: $0.double(1))) }
    }

    /// A name from the pointer's hash: any pointer, one plain identifier.
    static func indexName(_ pointer: String) -> String {
        "jobq_jobs_payload_" + SHA256.hex(pointer).prefix(16)
    }
}
