import Foundation
import JobQCore

/// The HTTP API's tokens (jobq_api_tokens): kept as the SHA-256 of their secrets, looked up by
/// it on every request; a name belongs to one token that is not revoked.
extension SQLStore {
    package func addAPIToken(_ token: APIToken, hash: String) async throws {
        try await write(.short) { db in
            // Either unique key refuses the row: the name, among tokens not revoked (a hash
            // clash of 160 random bits does not happen).
            try db.execute(
                sql: """
                    INSERT INTO jobq_api_tokens (token_hash, name, scopes, created_at) VALUES (?, ?, ?, ?)
                    ON CONFLICT DO NOTHING
                    """,
                arguments: [
                    hash, token.name, APIScope.text(token.scopes), token.createdAt.timeIntervalSince1970
                ])
            guard db.changesCount == 1 else {
                throw JobQueueError.invalidState(
                    "a token named \(JSONText.preview(token.name)) exists and is not revoked: revoke it first "
                        + "(`jobq token revoke \(token.name)`), or give the new one another name")
            }
        }
    }

    package func apiTokens() async throws -> [APIToken] {
        try await read { db in
            try db.fetchRows(sql: "SELECT \(Self.tokenColumns) FROM jobq_api_tokens ORDER BY name, created_at")
                .map(Self.apiToken)
        }
    }

    package func revokeAPIToken(named name: String, at time: Date) async throws -> APIToken {
        try await write(.short) { db in
            let hashes = try db.fetchAll(
                String.self, sql: "SELECT token_hash FROM jobq_api_tokens WHERE name = ? AND revoked_at IS NULL",
                arguments: [name])
            guard let hash = hashes.first else {
                throw JobQueueError.notFound(
                    "no token named \(JSONText.preview(name)) that is not revoked; list them with `jobq token list`")
            }
            try db.execute(
                sql: "UPDATE jobq_api_tokens SET revoked_at = ? WHERE token_hash = ?",
                arguments: [time.timeIntervalSince1970, hash])
            return try Self.apiToken(db, hash: hash)!
        }
    }

    /// The token whose secret hashes to `hash`, revoked or not; nil when there is none. Notes
    /// the use when the last one noted is a minute old or more: a request does not write
    /// every time, and one that does commits for nobody.
    package func apiToken(hash: String, usedAt now: Date) async throws -> APIToken? {
        guard let token = try await read(.short, { db in try Self.apiToken(db, hash: hash) }) else { return nil }
        if token.revokedAt == nil, token.lastUsedAt.map({ now.timeIntervalSince($0) >= 60 }) ?? true {
            // A note, not the request's purpose: a store that refuses it (busy past its timeout)
            // does not turn a valid token away.
            _ = try? await write(.short, audience: .nobody, lock: .shared) { db in
                try db.execute(
                    sql: "UPDATE jobq_api_tokens SET last_used_at = ? WHERE token_hash = ?",
                    arguments: [now.timeIntervalSince1970, hash])
            }
        }
        return token
    }

    private static var tokenColumns: String { "name, scopes, created_at, last_used_at, revoked_at" }

    private static func apiToken(_ db: some SQLTransaction, hash: String) throws -> APIToken? {
        try db.fetchRows(
            sql: "SELECT \(tokenColumns) FROM jobq_api_tokens WHERE token_hash = ?", arguments: [hash]
        ).first.map(apiToken)
    }

    private static func apiToken(_ row: SQLRow) -> APIToken {
        APIToken(
            name: row.string(0),
            // Written by jobq from known scopes; a name it does not know (a later version's) is
            // left out rather than granted.
            scopes: Set(row.string(1).split(separator: ",").compactMap { APIScope(rawValue: String($0)) }),
            createdAt: Date(timeIntervalSince1970: row.double(2)),
            lastUsedAt: row.optionalDouble(3).map(Date.init(timeIntervalSince1970:)),
            revokedAt: row.optionalDouble(4).map(Date.init(timeIntervalSince1970:)))
    }
}
