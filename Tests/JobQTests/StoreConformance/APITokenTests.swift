import Foundation
import Testing

@testable import JobQCore
@testable import JobQSQL

/// Tokens of the HTTP API: made with a secret shown once and kept as its hash, found by the
/// secret, listed, revoked; bad names, no scopes and a name in use are refused and change
/// nothing.
@Suite("API tokens")
struct APITokenTests {
    @Test(arguments: TestStore.all) func aTokenIsFoundByItsSecretUntilRevoked(store: TestStore) async throws {
        let queue = try await store.open()
        let made = try await queue.addAPIToken(named: "billing-service", scopes: [.enqueue, .read])
        #expect(made.secret.hasPrefix("jobq_") && made.secret.count == 45, "\(made.secret)")
        #expect(made.token.scopes == [.enqueue, .read])

        let found = try #require(try await queue.apiToken(forSecret: made.secret))
        #expect(found.name == "billing-service" && found.allows(.enqueue) && !found.allows(.operate))
        #expect(try await queue.apiToken(forSecret: made.secret + "0") == nil, "another secret")
        #expect(try await queue.apiToken(forSecret: "jobq_" + String(repeating: "0", count: 40)) == nil)

        // The store holds the hash, never the secret.
        let stored = try await queue.storedRows("SELECT token_hash, name FROM jobq_api_tokens")
        #expect(stored.count == 1)
        #expect(stored[0].string(0) == SHA256.hex(made.secret) && !stored[0].string(0).contains(made.secret))
        let listed = try await queue.apiTokens()
        #expect(listed.map(\.name) == ["billing-service"])
        #expect(listed[0].lastUsedAt != nil, "the lookup noted its use")

        let revoked = try await queue.revokeAPIToken(named: "billing-service")
        #expect(revoked.revokedAt != nil && !revoked.allows(.read))
        #expect(try await queue.apiToken(forSecret: made.secret) == nil, "a revoked token lets nothing in")
        // The name is free again; the revoked record stays.
        let again = try await queue.addAPIToken(named: "billing-service", scopes: [.read])
        #expect(try await queue.apiToken(forSecret: again.secret)?.scopes == [.read])
        #expect(try await queue.apiTokens().count == 2)
    }

    @Test(arguments: TestStore.all) func badTokensAreRefusedAndChangeNothing(store: TestStore) async throws {
        let queue = try await store.open()
        _ = try await queue.addAPIToken(named: "ci", scopes: [.read])
        let before = try await queue.apiTokens()
        await #expect(throws: JobQueueError.self) { try await queue.addAPIToken(named: "ci", scopes: [.operate]) }
        await #expect(throws: JobQueueError.self) { try await queue.addAPIToken(named: "", scopes: [.read]) }
        await #expect(throws: JobQueueError.self) { try await queue.addAPIToken(named: "a b", scopes: [.read]) }
        await #expect(throws: JobQueueError.self) { try await queue.addAPIToken(named: "x", scopes: []) }
        await #expect(throws: JobQueueError.self) { try await queue.revokeAPIToken(named: "nobody") }
        #expect(try await queue.apiTokens() == before)
        #expect(throws: JobQueueError.self) { try APIScope.parse("read,admin") }
        #expect(try APIScope.parse("operate, read") == [.operate, .read])
    }
}
