import Foundation

/// Where a store lives: a file, or a PostgreSQL database named by a URL.
package enum StoreLocation {
    case file(String)
    case postgres(String)

    package init(_ text: String) {
        let lowered = text.lowercased()
        self = lowered.hasPrefix("postgres://") || lowered.hasPrefix("postgresql://") ? .postgres(text) : .file(text)
    }

    /// The location for messages: a URL without its password.
    package var description: String {
        switch self {
        case .file(let path): path
        case .postgres(let url): Self.redacted(url)
        }
    }

    package static func redacted(_ url: String) -> String {
        guard var components = URLComponents(string: url) else { return "postgres://…" }
        if components.password != nil { components.password = "***" }
        return components.string ?? "postgres://…"
    }

    package static func withoutPostgres(_ url: String) -> CLIError {
        CLIError.usage(
            "--db \(redacted(url)): this jobq was built without PostgreSQL support; build it with "
                + "`swift build -c release --traits Postgres` (see the PostgreSQL article, Sources/JobQCore/JobQCore.docc/PostgreSQL.md)"
        )
    }
}
