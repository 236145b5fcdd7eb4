import Foundation
import JobQ
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
        let tls: PostgresConnection.Configuration.TLS
        switch settings.tls {
        case .disable:
            tls = .disable
        case .prefer:
            tls = .prefer(try Self.context(verification: .none))
        case .require:
            // libpq's `require` encrypts without checking who answers.
            tls = .require(try Self.context(verification: .none))
        case .verifyCA:
            tls = .require(try Self.context(verification: .noHostnameVerification))
        case .verifyFull:
            tls = .require(try Self.context(verification: .fullVerification))
        }
        return PostgresConnection.Configuration(
            host: settings.host, port: settings.port, username: settings.username, password: settings.password,
            database: settings.database, tls: tls)
    }

    private static func context(verification: CertificateVerification) throws -> NIOSSLContext {
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.certificateVerification = verification
        return try NIOSSLContext(configuration: configuration)
    }

    private static let ids = IDSource()

    /// A new connection; the caller closes it. A connect cancelled before it returns throws
    /// `CancellationError`.
    package func connect() async throws -> PostgresConnection {
        let connection: PostgresConnection
        do {
            connection = try await PostgresConnection.connect(configuration: try configuration(), id: Self.ids.next(), logger: logger)
        } catch {
            // Cancelled before the socket connected, postgres-nio fails with
            // `clientClosedConnection`: the caller's cancellation, not the server's fault.
            if error is CancellationError || Task.isCancelled { throw CancellationError() }
            throw unavailable(error)
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
        do {
            return try PostgresConnection.connect(
                on: PostgresConnection.defaultEventLoopGroup.any(), configuration: try configuration(), id: Self.ids.next(), logger: logger
            ).wait()
        } catch {
            throw unavailable(error)
        }
    }

    private func unavailable(_ error: any Error) -> any Error {
        if error is JobQueueError { return error }
        return JobQueueError.storeUnavailable(
            "cannot connect to PostgreSQL at \(settings): \(Self.explain(error)). Check that the server runs and accepts "
                + "this user and database, and the password (URL, PGPASSWORD or ~/.pgpass)")
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
    func next() -> Int { counter.withLock { $0 += 1; return $0 } }
}
