import Foundation

/// What a token of the HTTP API may do. Each scope stands alone: `operate` does not imply
/// `read`, so a token is given every scope it needs.
public enum APIScope: String, Sendable, Hashable, CaseIterable, Comparable {
    /// Read jobs (one, a list by filter) and wait for a job's result.
    case read
    /// Enqueue jobs, emit events, and signal durable functions.
    case enqueue
    /// Retry and cancel jobs, pause and resume queues.
    case operate

    public static func < (a: APIScope, b: APIScope) -> Bool {
        allCases.firstIndex(of: a)! < allCases.firstIndex(of: b)!
    }

    /// Scopes written as `read,enqueue`; an unknown name is an error that lists the known ones.
    public static func parse(_ text: String) throws(JobQueueError) -> Set<APIScope> {
        var scopes = Set<APIScope>()
        for part in text.split(separator: ",", omittingEmptySubsequences: false) {
            let name = part.trimmingCharacters(in: .whitespaces)
            guard let scope = APIScope(rawValue: name) else {
                throw .invalidInput(
                    "unknown API scope \(JSONText.preview(name)); the scopes are "
                        + allCases.map(\.rawValue).joined(separator: ", "))
            }
            scopes.insert(scope)
        }
        return scopes
    }

    /// `scopes` as the store and the CLI write them: `read,enqueue,operate`, in that order.
    public static func text(_ scopes: Set<APIScope>) -> String {
        scopes.sorted().map(\.rawValue).joined(separator: ",")
    }
}

/// A token of the HTTP API as the store records it: never the token itself, which is shown
/// once when it is made (``NewAPIToken``) and kept only as its SHA-256.
///
/// ```swift
/// for token in try await queue.apiTokens() where token.revokedAt == nil {
///     print(token.name, APIScope.text(token.scopes), token.lastUsedAt ?? "never used")
/// }
/// ```
public struct APIToken: Sendable, Hashable {
    /// The operator's name for it (`ci`, `billing-service`); one token that is not revoked has it.
    public var name: String
    public var scopes: Set<APIScope>
    public var createdAt: Date
    /// When a request last carried it, to the minute (a request writes this at most once a minute).
    public var lastUsedAt: Date?
    /// When it was revoked; nil while it is valid.
    public var revokedAt: Date?

    package init(name: String, scopes: Set<APIScope>, createdAt: Date, lastUsedAt: Date?, revokedAt: Date?) {
        self.name = name
        self.scopes = scopes
        self.createdAt = createdAt
        self.lastUsedAt = lastUsedAt
        self.revokedAt = revokedAt
    }

    /// Whether the token may act in `scope`: it is not revoked and has the scope.
    public func allows(_ scope: APIScope) -> Bool { revokedAt == nil && scopes.contains(scope) }

    /// The token as one line of JSON: `name`, `scopes` (an array), `createdAt`, `lastUsedAt`,
    /// `revokedAt` (ISO 8601, UTC, or null).
    public var jsonLine: String {
        var object = JSONObjectBuilder()
        object.add("name", string: name)
        object.add(
            "scopes", raw: "[" + scopes.sorted().map { JSONText.string($0.rawValue) }.joined(separator: ",") + "]")
        object.add("createdAt", date: createdAt)
        object.add("lastUsedAt", raw: lastUsedAt.map { JSONText.string(ISO8601.string($0)) } ?? "null")
        object.add("revokedAt", raw: revokedAt.map { JSONText.string(ISO8601.string($0)) } ?? "null")
        return object.text
    }
}

/// A token just made by ``JobQueue/addAPIToken(named:scopes:)``: the only time its secret is
/// known. Give `secret` to the client; the store keeps its hash alone.
public struct NewAPIToken: Sendable {
    /// `jobq_` and 40 hex digits (160 random bits): what a request carries as
    /// `Authorization: Bearer SECRET`.
    public let secret: String
    public let token: APIToken
}

extension APIToken {
    /// The prefix of every secret: a leaked one is recognisable (secret scanners, logs).
    package static let secretPrefix = "jobq_"

    /// A new secret from the system's random generator.
    package static func newSecret() -> String {
        var generator = SystemRandomNumberGenerator()
        let digits = Array("0123456789abcdef")
        var secret = secretPrefix
        for _ in 0..<20 {
            let byte = UInt8.random(in: 0...255, using: &generator)
            secret.append(digits[Int(byte >> 4)])
            secret.append(digits[Int(byte & 0xf)])
        }
        return secret
    }

    /// What the store keeps of a secret.
    package static func hash(ofSecret secret: String) -> String { SHA256.hex(secret) }

    /// A name the CLI can show and type: 1 to 64 letters, digits, `-`, `_`, `.` or `:`.
    package static func checkName(_ name: String) throws(JobQueueError) {
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.:")
        guard (1...64).contains(name.count), name.allSatisfy({ allowed.contains($0) }) else {
            throw .invalidInput(
                "a token's name is 1 to 64 letters, digits, '-', '_', '.' or ':' (like `billing-service`), not "
                    + JSONText.preview(name))
        }
    }
}
