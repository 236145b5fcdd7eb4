import Foundation

extension JobQueue {
    // MARK: Tokens of the HTTP API

    /// Makes a token of the HTTP API (`/api/v1`, served by `jobq dashboard`) with `scopes`, and
    /// returns its secret: the only time it is known, since the store keeps its SHA-256 alone.
    ///
    /// ```swift
    /// let made = try await queue.addAPIToken(named: "billing-service", scopes: [.enqueue, .read])
    /// print(made.secret)  // jobq_3f9c...: the client sends `Authorization: Bearer jobq_3f9c...`
    /// ```
    ///
    /// - Throws: ``JobQueueError/invalidInput(_:)`` for a name that is not 1 to 64 letters,
    ///   digits, `-`, `_`, `.` or `:`, or no scope; ``JobQueueError/invalidState(_:)`` when a
    ///   token that is not revoked has the name.
    public func addAPIToken(named name: String, scopes: Set<APIScope>) async throws -> NewAPIToken {
        try APIToken.checkName(name)
        guard !scopes.isEmpty else {
            throw JobQueueError.invalidInput(
                "a token needs at least one scope: " + APIScope.allCases.map(\.rawValue).joined(separator: ", "))
        }
        let secret = APIToken.newSecret()
        // Whole seconds, as `jobq token list` shows them.
        let now = Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down))
        let token = APIToken(name: name, scopes: scopes, createdAt: now, lastUsedAt: nil, revokedAt: nil)
        try await store.addAPIToken(token, hash: APIToken.hash(ofSecret: secret))
        return NewAPIToken(secret: secret, token: token)
    }

    /// Every token of the HTTP API, revoked ones included, by name.
    public func apiTokens() async throws -> [APIToken] {
        try await store.apiTokens()
    }

    /// Revokes the token named `name`: from now on a request that carries it is refused (401).
    /// The record stays, with the time it was revoked; the name is free for a new token.
    ///
    /// ```swift
    /// try await queue.revokeAPIToken(named: "billing-service")
    /// ```
    ///
    /// - Throws: ``JobQueueError/notFound(_:)`` when no token of that name is valid.
    @discardableResult
    public func revokeAPIToken(named name: String) async throws -> APIToken {
        try await store.revokeAPIToken(named: name, at: Date())
    }

    /// The valid token whose secret is `secret` (what a request carried as its bearer token),
    /// or nil when there is none or it was revoked. Notes when it was used, at most once a
    /// minute.
    ///
    /// ```swift
    /// guard let token = try await queue.apiToken(forSecret: bearer), token.allows(.enqueue) else { ... }
    /// ```
    public func apiToken(forSecret secret: String) async throws -> APIToken? {
        // Not a secret jobq made: no read of the store for it.
        guard secret.hasPrefix(APIToken.secretPrefix), secret.utf8.count == APIToken.secretPrefix.utf8.count + 40 else {
            return nil
        }
        let token = try await store.apiToken(hash: APIToken.hash(ofSecret: secret), usedAt: Date())
        return token?.revokedAt == nil ? token : nil
    }
}
