import Foundation
import JobQCore
import JobQSQL
import Logging
import PostgresNIO
import Synchronization

/// Opens connections to the server that ``PostgresSettings`` name, with the TLS their
/// `sslmode` asks for, and turns failures into errors that say what to check (never with the
/// password). Tools in this package (the bench, the chaos run) connect through it too.
package struct PostgresConnector: Sendable {
    package let settings: PostgresSettings
    package let logger: Logger

    package init(settings: PostgresSettings, logger: Logger) {
        self.settings = settings
        self.logger = logger
    }

    func configuration() throws -> PostgresConnection.Configuration {
        // Settings made through the API are held to what the URL's parameters are.
        try settings.timeouts.check()
        try PostgresSettings.checkSchema(settings.schema)
        let tls: PostgresConnection.Configuration.TLS
        switch settings.tls {
        case .disable:
            tls = .disable
        case .prefer:
            tls = .prefer(try Self.context(verification: .none, roots: nil))
        case .require:
            // libpq's `require` encrypts without checking who answers, unless a root certificate
            // file is named: then it checks the CA, as verify-ca does.
            if let roots = settings.rootCertificates {
                tls = .require(try Self.context(verification: .noHostnameVerification, roots: roots))
            } else {
                tls = .require(try Self.context(verification: .none, roots: nil))
            }
        case .verifyCA:
            tls = .require(try Self.context(verification: .noHostnameVerification, roots: try verificationRoots()))
        case .verifyFull:
            tls = .require(try Self.context(verification: .fullVerification, roots: try verificationRoots()))
        }
        var configuration = PostgresConnection.Configuration(
            host: settings.host, port: settings.port, username: settings.username, password: settings.password,
            database: settings.database, tls: tls)
        configuration.options.connectTimeout = .nanoseconds(
            Int64(settings.timeouts.connect.components.seconds) * 1_000_000_000
                + settings.timeouts.connect.components.attoseconds / 1_000_000_000)
        // Every session's bounds, in the startup message: no extra round trip.
        // The store's schema first, for the hot path's prepared statements (their text is a
        // constant, so they name tables bare: ``SchemaNames/unqualified(_:)``); every other
        // statement names its tables with the schema and reads no search_path.
        configuration.options.additionalStartupParameters =
            settings.timeouts.startupParameters + [
                ("search_path", settings.schemaNames.quotedSchema), ("application_name", settings.applicationName)
            ]
        return configuration
    }

    /// The roots verify-ca and verify-full check against: the URL's `sslrootcert`, else
    /// `~/.postgresql/root.crt`; never silently the system's (any public certificate would pass).
    private func verificationRoots() throws -> PostgresSettings.RootCertificates {
        if let roots = settings.rootCertificates { return roots }
        if let path = settings.defaultRootCertificatePath, FileManager.default.fileExists(atPath: path) {
            return .file(path)
        }
        throw JobQueueError.invalidInput(
            "sslmode=\(settings.tls.rawValue) checks the server's certificate against a CA, and none is named: add "
                + "sslrootcert=/path/to/ca.pem to the PostgreSQL URL (or put it in ~/.postgresql/root.crt), "
                + "or sslrootcert=system to trust any publicly issued certificate")
    }

    private static func context(verification: CertificateVerification, roots: PostgresSettings.RootCertificates?) throws
        -> NIOSSLContext
    {
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.certificateVerification = verification
        if case .file(let path) = roots {
            do {
                configuration.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(path))
            } catch {
                throw JobQueueError.invalidInput(
                    "sslrootcert=\(path): cannot read CA certificates from it (\(error)); give a readable PEM file")
            }
        }
        return try NIOSSLContext(configuration: configuration)
    }

    private static let ids = IDSource()

    /// A new connection; the caller closes it. A connect cancelled before it returns throws
    /// `CancellationError`.
    package func connect() async throws -> PostgresConnection {
        let connection: PostgresConnection
        var refusals = RefusalWait(connector: self)
        while true {
            do {
                connection = try await PostgresConnection.connect(
                    configuration: try configuration(), id: Self.ids.next(), logger: logger)
                refusals.connected()
                break
            } catch {
                // Cancelled before the socket connected, postgres-nio fails with
                // `clientClosedConnection`: the caller's cancellation, not the server's fault.
                if error is CancellationError || Task.isCancelled { throw CancellationError() }
                guard let pause = refusals.pause(after: error) else { throw unavailable(error) }
                try await Task.sleep(for: pause)
            }
        }
        // postgres-nio closes the socket of a connect cancelled during its handshake, yet returns
        // the connection when the handshake won the race; a query on it then never answers (its
        // write fails with no one to tell). A pool's commit watch, cancelled as the pool stopped,
        // hung on such a probe. So a cancelled connect never hands a connection out.
        if Task.isCancelled {
            try? await connection.close()  // awaited: postgres-nio asserts a connection is closed before it goes
            throw CancellationError()
        }
        return connection
    }

    /// ``connect()`` on a thread that may block (never one of Swift concurrency's).
    package func connectBlocking() throws -> PostgresConnection {
        var refusals = RefusalWait(connector: self)
        while true {
            do {
                let connection = try PostgresConnection.connect(
                    on: PostgresConnection.defaultEventLoopGroup.any(), configuration: try configuration(),
                    id: Self.ids.next(), logger: logger
                ).wait()
                refusals.connected()
                return connection
            } catch {
                guard let pause = refusals.pause(after: error) else { throw unavailable(error) }
                Thread.sleep(forTimeInterval: pause.inSeconds)
            }
        }
    }

    private func unavailable(_ error: any Error) -> any Error {
        if error is JobQueueError { return error }
        if ServerOutage.isRefusedForNow(error) {
            return JobQueueError.storeUnavailable(
                "PostgreSQL at \(settings) refused new connections for \(DurationParser.format(RefusalWait.limit)): \(Self.explain(error)). "
                    + "The server has none to spare (max_connections, or the role's or database's CONNECTION LIMIT): "
                    + "give each process fewer (connections= in the URL), run fewer processes, or raise the limit")
        }
        if ServerOutage.connectMayWork(after: error, settings: settings) {
            return JobQueueError.storeUnavailable(
                "PostgreSQL at \(settings) was out of reach for \(DurationParser.format(RefusalWait.limit)): \(Self.explain(error, otherwise: "08001")). "
                    + "Check that the server runs; this process goes on trying")
        }
        return JobQueueError.storeUnavailable(
            "cannot connect to PostgreSQL at \(settings): \(Self.explain(error, otherwise: "08001")). Check that the server runs and accepts "
                + "this user and database, and the password (URL, PGPASSWORD or ~/.pgpass)")
    }

    /// ``explain(_:)``, with `state` as the SQLSTATE when the server gave none (a connection
    /// that failed or never opened: class 08, what callers tell an outage by).
    static func explain(_ error: any Error, otherwise state: String) -> String {
        let said = explain(error)
        return said.contains("(SQLSTATE ") ? said : said + " (SQLSTATE \(state))"
    }

    /// What a postgres-nio error says, without anything the server could echo of the password.
    static func explain(_ error: any Error) -> String {
        if let error = error as? PSQLError {
            if let message = error.serverInfo?[.message] {
                let code = error.serverInfo?[.sqlState].map { " (SQLSTATE \($0))" } ?? ""
                return message + code
            }
            return "\(error.code)"
        }
        return "\(error)"
    }
}

/// Connection ids for postgres-nio's logs.
private final class IDSource: Sendable {
    private let counter = Mutex(0)
    func next() -> Int {
        counter.withLock {
            $0 += 1
            return $0
        }
    }
}
