import ArgumentParser
import Foundation
import JobQ
import JobQCommandLine

struct TokenCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "token",
        abstract: "Tokens of the HTTP API (`/api/v1`, served by `jobq dashboard`).",
        discussion: """
            A request to the API carries a token as `Authorization: Bearer SECRET`; without a \
            valid one it is refused, whatever address the server listens on. Each token has \
            scopes: read (jobs, results), enqueue (jobs, events, signals), operate (retry, \
            cancel, pause, resume). The secret is printed once, when the token is made: the \
            store keeps only its SHA-256.
              jobq token add billing-service --scope enqueue,read
              jobq token list
              jobq token revoke billing-service
            """,
        subcommands: [TokenAddCommand.self, TokenListCommand.self, TokenRevokeCommand.self])
}

struct TokenAddCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add", abstract: "Make a token; print its secret (shown this once).")
    @OptionGroup var store: StoreOptions
    @Argument(help: "Its name: 1 to 64 letters, digits, '-', '_', '.' or ':'.") var name: String
    @Option(help: "What it may do: read, enqueue, operate, comma-separated (e.g. enqueue,read).") var scope: String

    func run() async throws {
        let scopes: Set<APIScope>
        do {
            scopes = try APIScope.parse(scope)
        } catch {
            throw CLIError.usage("--scope: \(error.description)")
        }
        let made = try await store.open().addAPIToken(named: name, scopes: scopes)
        // The secret alone on stdout, for `SECRET=$(jobq token add ...)`; the rest on stderr.
        print(made.secret)
        FileHandle.standardError.write(
            Data(
                ("token \(name) (\(APIScope.text(scopes))) made; this is the only time its secret is shown: "
                    + "keep it where the client reads it\n").utf8))
    }
}

struct TokenListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list", abstract: "The tokens: name, scopes, when made, last used and revoked.")
    @OptionGroup var store: StoreOptions
    @Flag(help: "Print JSON Lines: one token per line.") var json = false

    func run() async throws {
        let tokens = try await store.open().apiTokens()
        if json {
            for token in tokens { print(token.jsonLine) }
            return
        }
        guard !tokens.isEmpty else {
            print("no API token; make one with `jobq token add NAME --scope read`")
            return
        }
        let rows = tokens.map { token in
            [
                token.name, APIScope.text(token.scopes), isoString(token.createdAt),
                token.lastUsedAt.map(isoString) ?? "never", token.revokedAt.map(isoString) ?? "-"
            ]
        }
        print(Table.render([["NAME", "SCOPES", "MADE", "LAST USED", "REVOKED"]] + rows))
    }
}

struct TokenRevokeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "revoke", abstract: "Revoke a token: requests that carry it are refused from now on.")
    @OptionGroup var store: StoreOptions
    @Argument(help: "The token's name.") var name: String

    func run() async throws {
        let token = try await store.open().revokeAPIToken(named: name)
        print("token \(token.name) revoked at \(isoString(token.revokedAt ?? Date()))")
    }
}
