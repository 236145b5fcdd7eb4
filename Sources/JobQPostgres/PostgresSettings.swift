import Foundation
import JobQCore
import JobQSQL

/// Where a PostgreSQL store is and how to log in: read from a `postgres://` URL, with the
/// password from the URL, else `PGPASSWORD`, else the password file (`PGPASSFILE` or
/// `~/.pgpass`), as libpq reads them. The password never appears in `description`, logs or
/// errors.
///
/// ```swift
/// let settings = try PostgresSettings(url: "postgres://jobq@db.internal:5432/jobs?sslmode=verify-full&sslrootcert=/etc/jobq/ca.pem")
/// print(settings)  // postgres://jobq@db.internal:5432/jobs?sslmode=verify-full&sslrootcert=/etc/jobq/ca.pem
/// ```
///
/// As with libpq, `verify-ca` and `verify-full` check the server's certificate against the CA
/// certificates in `sslrootcert` (a PEM file; default `~/.postgresql/root.crt`), or against the
/// system's trust roots with `sslrootcert=system`; without one of those they refuse to connect.
/// `require` with an explicit `sslrootcert` checks the CA too, as libpq does.
public struct PostgresSettings: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible {
    /// How the connection uses TLS: libpq's `sslmode` values.
    public enum TLSMode: String, Sendable, Hashable, CaseIterable {
        /// Never.
        case disable
        /// If the server offers it (libpq's `allow` and `prefer`; the default).
        case prefer
        /// Always, without checking the server's certificate (libpq's `require`).
        case require
        /// Always, with the certificate checked against the root certificates, not its name.
        case verifyCA = "verify-ca"
        /// Always, with the certificate and the host name checked.
        case verifyFull = "verify-full"
    }

    /// The CA certificates a server's certificate is checked against (libpq's `sslrootcert`).
    public enum RootCertificates: Sendable, Hashable {
        /// A PEM file of CA certificates.
        case file(String)
        /// The system's trust roots (`sslrootcert=system`): any publicly issued certificate.
        case system
    }

    public var host: String
    public var port: Int
    public var username: String
    public var database: String
    public var tls: TLSMode
    /// `sslrootcert` as given in the URL; nil when the URL gives none.
    public var rootCertificates: RootCertificates?
    /// How long statements, lock waits, idle transactions and connects may take (defaults, or
    /// the URL's `statement_timeout`, `lock_timeout`, `idle_in_transaction_session_timeout`,
    /// `connect_timeout`, `keepalives_idle`, `keepalives_interval`, `keepalives_count`).
    public var timeouts = Timeouts()
    /// Whether the hot path's fixed statements (self-contained enqueues, claims, a worker's successes)
    /// are prepared once per connection and then only bound and run (the default), or parsed
    /// and planned on every run (`prepare=off` in the URL: for a pooler in transaction mode
    /// that does not keep prepared statements, e.g. PgBouncer before 1.21 or without
    /// `max_prepared_statements`).
    public var preparesStatements = true
    /// How many connections one process opens to the server at most (`connections=N` in the
    /// URL, 1 to 64; 3 by default), and how they are spent (one listening for wake-ups, one for
    /// transactions, the rest for the hot path's single statements and for readers: see the
    /// article "PostgreSQL"). With 1 there is no LISTEN connection, and other processes' work is
    /// found by polling, about once a second.
    ///
    /// ```swift
    /// var settings = try PostgresSettings(url: "postgres://jobq@db/jobs?connections=2")
    /// settings.connections = 5
    /// ```
    public var connections = ConnectionLayout.defaultBudget
    /// Where the LISTEN connection goes instead of ``host`` and ``port`` (`listen_host=` and
    /// `listen_port=` in the URL): behind a pooler in transaction mode, which cannot keep a
    /// LISTEN, name the server itself here and workers are woken at once rather than by their
    /// poll. Same user, password and database; nil: ``host`` and ``port``.
    ///
    /// ```swift
    /// let settings = try PostgresSettings(url: "postgres://jobq@pgbouncer:6432/jobs?prepare=off&listen_host=db.internal&listen_port=5432")
    /// ```
    public var listenHost: String?
    /// The LISTEN connection's port when it differs from ``port`` (see ``listenHost``).
    public var listenPort: Int?
    /// The name jobq's connections show in `pg_stat_activity` (`application_name=` in the URL, as
    /// in libpq; `jobq` by default): printable ASCII, at most 63 characters.
    public var applicationName = PostgresSettings.defaultApplicationName
    /// ``applicationName`` unless the URL says otherwise.
    public static let defaultApplicationName = "jobq"
    /// The schema that holds jobq's tables, so that they sit beside the application's own in
    /// one database (`schema=` in the URL; `jobq` by default). `jobq migrate up` creates it and
    /// moves the tables of a store made before schemas (in `public`) into it.
    public var schema = PostgresSettings.defaultSchema
    /// The schema jobq's tables live in unless the URL says otherwise.
    public static let defaultSchema = "jobq"
    /// ``schema``'s names.
    package var schemaNames: SchemaNames { SchemaNames.shared(schema) }
    /// `~/.postgresql/root.crt`, which `verify-ca` and `verify-full` use when the URL names none.
    var defaultRootCertificatePath: String?
    /// Kept out of `description`, `Hashable` reads it like any field.
    var password: String?

    /// Whether a password was found (in the URL, `PGPASSWORD` or the password file).
    public var hasPassword: Bool { password != nil }

    /// - Parameters:
    ///   - url: `postgres://user[:password]@host[:port]/database[?sslmode=...&sslrootcert=...]` (or
    ///     `postgresql://`).
    ///   - environment: Where `PGPASSWORD`, `PGPASSFILE` and `HOME` are read (the process's by default).
    public init(url: String, environment: [String: String] = ProcessInfo.processInfo.environment) throws {
        guard let components = URLComponents(string: url), let scheme = components.scheme?.lowercased(),
            scheme == "postgres" || scheme == "postgresql"
        else {
            throw JobQueueError.invalidInput(
                "'\(Self.redacted(url))' is not a PostgreSQL URL; write postgres://user@host:port/database")
        }
        guard let host = components.host, !host.isEmpty else {
            throw JobQueueError.invalidInput(
                "the PostgreSQL URL \(Self.redacted(url)) names no host; write postgres://user@host:port/database")
        }
        guard let user = components.user, !user.isEmpty else {
            throw JobQueueError.invalidInput(
                "the PostgreSQL URL \(Self.redacted(url)) names no user; write postgres://user@host:port/database")
        }
        let database = String(components.path.drop { $0 == "/" })
        guard !database.isEmpty, !database.contains("/") else {
            throw JobQueueError.invalidInput(
                "the PostgreSQL URL \(Self.redacted(url)) names no database; write postgres://user@host:port/database")
        }
        var tls = TLSMode.prefer
        var rootCertificates: RootCertificates?
        var timeouts = Timeouts()
        var prepares = true
        var schema = Self.defaultSchema
        var connections = ConnectionLayout.defaultBudget
        var applicationName = Self.defaultApplicationName
        var listenHost: String?
        var listenPort: Int?
        for item in components.queryItems ?? [] {
            switch item.name {
            case "listen_host":
                guard let value = item.value, !value.isEmpty else {
                    throw JobQueueError.invalidInput(
                        "listen_host in the PostgreSQL URL is empty: name the server the LISTEN connection goes to directly"
                    )
                }
                listenHost = value
            case "listen_port":
                guard let port = Int(item.value ?? ""), (1...65535).contains(port) else {
                    throw JobQueueError.invalidInput(
                        "listen_port=\(item.value ?? "") in the PostgreSQL URL is not a port (1 to 65535)")
                }
                listenPort = port
            case "application_name":
                applicationName = item.value ?? ""
                try Self.checkApplicationName(applicationName)
            case "connections":
                guard let count = Int(item.value ?? ""), ConnectionLayout.allowed.contains(count) else {
                    throw JobQueueError.invalidInput(
                        "connections=\(item.value ?? "") in the PostgreSQL URL is not a whole number from \(ConnectionLayout.allowed.lowerBound) to \(ConnectionLayout.allowed.upperBound) "
                            + "(connections one process opens at most; 3 by default)")
                }
                connections = count
            case "schema":
                schema = item.value ?? ""
                try Self.checkSchema(schema)
            case "prepare":
                switch item.value ?? "" {
                case "on": prepares = true
                case "off": prepares = false
                default:
                    throw JobQueueError.invalidInput(
                        "prepare=\(item.value ?? "") in the PostgreSQL URL is not on or off (off: parse every statement, "
                            + "for a pooler in transaction mode that does not keep prepared statements)")
                }
            case "sslmode":
                let value = item.value ?? ""
                if value == "allow" {
                    tls = .prefer
                } else if let mode = TLSMode(rawValue: value) {
                    tls = mode
                } else {
                    throw JobQueueError.invalidInput(
                        "sslmode=\(value) in the PostgreSQL URL is not one of disable, allow, prefer, require, verify-ca, verify-full"
                    )
                }
            case "sslrootcert":
                let value = item.value ?? ""
                guard !value.isEmpty else {
                    throw JobQueueError.invalidInput(
                        "sslrootcert in the PostgreSQL URL is empty: give a PEM file of CA certificates, or system")
                }
                rootCertificates = value == "system" ? .system : .file(value)
            default:
                guard try timeouts.read(item.name, item.value ?? "") else {
                    throw JobQueueError.invalidInput(
                        "the PostgreSQL URL parameter '\(item.name)' is not supported; jobq reads schema, sslmode, sslrootcert, prepare, connections, application_name, listen_host, listen_port, "
                            + Timeouts.parameterNames.joined(separator: ", "))
                }
            }
        }
        self.host = host
        self.port = components.port ?? 5432
        guard (1...65535).contains(self.port) else {
            throw JobQueueError.invalidInput("port \(self.port) in the PostgreSQL URL is out of range")
        }
        self.username = user
        self.database = database
        self.tls = tls
        self.rootCertificates = rootCertificates
        self.timeouts = timeouts
        self.preparesStatements = prepares
        self.schema = schema
        self.connections = connections
        self.applicationName = applicationName
        self.listenHost = listenHost
        self.listenPort = listenPort
        defaultRootCertificatePath = environment["HOME"].map { $0 + "/.postgresql/root.crt" }
        if let password = components.password {
            self.password = password
        } else if let password = environment["PGPASSWORD"] {
            self.password = password
        } else {
            let file = environment["PGPASSFILE"] ?? environment["HOME"].map { $0 + "/.pgpass" }
            self.password = file.flatMap {
                Self.passwordFromFile($0, host: host, port: self.port, database: database, user: user)
            }
        }
    }

    /// These settings with the LISTEN connection's host and port (``listenHost``).
    var forListening: PostgresSettings {
        var direct = self
        direct.host = listenHost ?? host
        direct.port = listenPort ?? port
        direct.listenHost = nil
        direct.listenPort = nil
        return direct
    }

    /// Refuses an application name PostgreSQL would not show as given: empty, over 63
    /// characters (it cuts it), or other than printable ASCII (it shows `?` instead).
    static func checkApplicationName(_ name: String) throws {
        guard !name.isEmpty, name.utf8.count <= 63, name.unicodeScalars.allSatisfy({ (0x20...0x7E).contains($0.value) })
        else {
            throw JobQueueError.invalidInput(
                "application_name=\(Label.shown(name)) in the PostgreSQL URL: give 1 to 63 printable ASCII characters, "
                    + "or leave it out for 'jobq'")
        }
    }

    /// Refuses a schema name PostgreSQL would not keep as given: empty, longer than its 63
    /// bytes (it would cut it), with a control character, or in the `pg_` namespace it reserves.
    static func checkSchema(_ schema: String) throws {
        guard !schema.isEmpty, schema.utf8.count <= 63 else {
            throw JobQueueError.invalidInput(
                "schema=\(schema) in the PostgreSQL URL: a schema name is 1 to 63 bytes; give another, or leave it out for 'jobq'"
            )
        }
        guard !schema.unicodeScalars.contains(where: Label.isControl), !schema.lowercased().hasPrefix("pg_") else {
            throw JobQueueError.invalidInput(
                "schema=\(Label.shown(schema)) in the PostgreSQL URL: a schema name may not hold control characters "
                    + "or start with pg_ (PostgreSQL keeps those); give another, or leave it out for 'jobq'")
        }
    }

    /// The URL without its password.
    public var description: String {
        var parameters: [String] = []
        if schema != Self.defaultSchema {
            parameters.append(
                "schema=\(schema.addingPercentEncoding(withAllowedCharacters: .urlQueryAllowed) ?? schema)")
        }
        if tls != .prefer { parameters.append("sslmode=\(tls.rawValue)") }
        switch rootCertificates {
        case .file(let path):
            parameters.append(
                "sslrootcert=\(path.addingPercentEncoding(withAllowedCharacters: .urlQueryAllowed) ?? path)")
        case .system: parameters.append("sslrootcert=system")
        case nil: break
        }
        parameters += timeouts.urlParameters
        if !preparesStatements { parameters.append("prepare=off") }
        if connections != ConnectionLayout.defaultBudget { parameters.append("connections=\(connections)") }
        if let listenHost {
            parameters.append(
                "listen_host=\(listenHost.addingPercentEncoding(withAllowedCharacters: .urlQueryAllowed) ?? listenHost)"
            )
        }
        if let listenPort { parameters.append("listen_port=\(listenPort)") }
        if applicationName != Self.defaultApplicationName {
            parameters.append(
                "application_name=\(applicationName.addingPercentEncoding(withAllowedCharacters: .urlQueryAllowed) ?? applicationName)"
            )
        }
        let tlsPart = parameters.isEmpty ? "" : "?" + parameters.joined(separator: "&")
        let hostPart = host.contains(":") ? "[\(host)]" : host
        return
            "postgres://\(Self.percentEncoded(username))@\(hostPart):\(port)/\(Self.percentEncoded(database))\(tlsPart)"
    }

    /// The same as `description`: the password stays out of `debugPrint` and `dump` too.
    public var debugDescription: String { description }

    /// A URL as text, with any password replaced by `***`, for messages about a URL that did
    /// not parse.
    static func redacted(_ url: String) -> String {
        guard let schemeEnd = url.range(of: "://"), let at = url[schemeEnd.upperBound...].lastIndex(of: "@") else {
            return url
        }
        let userInfo = url[schemeEnd.upperBound..<at]
        guard let colon = userInfo.firstIndex(of: ":") else { return url }
        return String(url[..<colon]) + ":***" + String(url[at...])
    }

    private static func percentEncoded(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: .urlUserAllowed.intersection(.urlPathAllowed)) ?? text
    }

    /// The password of the first matching line of a libpq password file
    /// (`hostname:port:database:username:password`, `*` matches anything, `\:` and `\\` are
    /// escapes). Like libpq, a file others can read is ignored.
    static func passwordFromFile(_ path: String, host: String, port: Int, database: String, user: String) -> String? {
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: path),
            let permissions = attributes[.posixPermissions] as? Int, permissions & 0o077 == 0,
            let text = try? String(contentsOfFile: path, encoding: .utf8)
        else { return nil }
        for line in text.split(whereSeparator: \.isNewline) {
            guard !line.hasPrefix("#") else { continue }
            let fields = splitPasswordLine(String(line))
            guard fields.count == 5 else { continue }
            let wanted = [host, String(port), database, user]
            if zip(fields.prefix(4), wanted).allSatisfy({ $0 == "*" || $0 == $1 }) { return fields[4] }
        }
        return nil
    }

    private static func splitPasswordLine(_ line: String) -> [String] {
        var fields: [String] = []
        var current = ""
        var escaped = false
        for character in line {
            if escaped {
                current.append(character)
                escaped = false
            } else if character == "\\" {
                escaped = true
            } else if character == ":", fields.count < 4 {
                fields.append(current)
                current = ""
            } else {
                current.append(character)
            }
        }
        fields.append(current)
        return fields
    }
}
