import Foundation
import GRDB
import JobQ
import JobQPostgres
import Logging
import PostgresNIO

/// An application that writes an order and enqueues its job in one transaction of its own, 200
/// times, 20 ms apart (so that the run's killer finds it at work): one in five rolls back. Run as a process (`jobq-chaos app-producer --db DB --name N`)
/// that the chaos run kills at random, in the middle of a transaction or not. Each committed
/// order's note is appended to `--out` after its commit: the acknowledged ones.
enum AppProducer {
    static let table = "chaos_app_orders"

    /// The application's table, created by the chaos run before any producer starts.
    static func createTable(postgres: Bool) -> String {
        postgres
            ? "CREATE TABLE public.\(table) (id bigserial PRIMARY KEY, note text NOT NULL UNIQUE)"
            : "CREATE TABLE \(table) (id INTEGER PRIMARY KEY, note TEXT NOT NULL UNIQUE)"
    }

    /// `locks`: `GATE:RUNNING`, the lock files the server's restarts take (see main.swift): each
    /// transaction runs between restarts, which then find its connection idle (postgres-nio
    /// leaves a query sent as the server closes its connection unanswered for good).
    static func run(db: String, name: String, out: String, locks: String?) async throws {
        let turns = locks.map { paths -> (Int32, Int32) in
            let parts = paths.split(separator: ":").map(String.init)
            return (open(parts[0], O_RDWR | O_CREAT, 0o644), open(parts[1], O_RDWR | O_CREAT, 0o644))
        }
        let transactions = 200
        @Sendable func note(_ index: Int) -> String { "\(name)-\(index)" }
        @Sendable func request(_ index: Int) throws -> JobRequest {
            try JobRequest(executor: "sum", payloadJSON: #"{"a": 1, "b": 1, "order": "\#(note(index))"}"#)
        }
        if db.hasPrefix("postgres") {
            let logger = Logger(label: "chaos.app")
            let settings = try PostgresSettings(url: db)
            let queue = try await JobQueue(postgres: settings, logger: logger)
            let connector = PostgresConnector(settings: settings, logger: logger)
            var connection = try await connector.connect()
            for index in 0..<transactions {
                if let (gate, running) = turns {
                    flock(gate, LOCK_EX)
                    flock(gate, LOCK_UN)
                    flock(running, LOCK_SH)
                }
                defer { if let (_, running) = turns { flock(running, LOCK_UN) } }
                if connection.isClosed {
                    try? await connection.close()
                    connection = try await connector.connect()
                }
                do {
                    try await connection.query("BEGIN", logger: logger)
                    try await connection.query(
                        "INSERT INTO public.chaos_app_orders (note) VALUES (\(note(index)))", logger: logger)
                    try await queue.enqueue(try request(index), in: connection)
                    let rollback = index % 5 == 2
                    try await connection.query(rollback ? "ROLLBACK" : "COMMIT", logger: logger)
                    if !rollback { acknowledge(note(index), out: out) }
                } catch  where Self.serverWentAway(error, connection) {
                    // The server went away (a restart): this order is not acknowledged (its commit
                    // may or may not have happened, the order with its job or neither), and the
                    // application goes on with the next on a new connection.
                    try? await connection.close()
                    connection = try await connector.connect()
                }
                try await Task.sleep(for: .milliseconds(20))
            }
            try await connection.close()
        } else {
            let queue = try JobQueue(path: db)
            var configuration = Configuration()
            configuration.busyMode = .timeout(10)
            let pool = try DatabasePool(path: db, configuration: configuration)
            struct RolledBack: Error {}
            for index in 0..<transactions {
                do {
                    try await pool.write { database in
                        try database.execute(
                            sql: "INSERT INTO chaos_app_orders (note) VALUES (?)", arguments: [note(index)])
                        try queue.enqueue(try request(index), in: database)
                        if index % 5 == 2 { throw RolledBack() }
                    }
                    acknowledge(note(index), out: out)
                } catch is RolledBack {}
                try await Task.sleep(for: .milliseconds(20))
            }
        }
    }

    /// Whether `error` is the server going away under the transaction (a restart ends every
    /// session: SQLSTATE 57P01, or the connection closed), not anything jobq or the data did.
    private static func serverWentAway(_ error: any Error, _ connection: PostgresConnection) -> Bool {
        if connection.isClosed { return true }
        if let error = error as? PSQLError {
            if let state = error.serverInfo?[.sqlState] { return state == "57P01" }
            return [.connectionError, .serverClosedConnection, .uncleanShutdown].contains(error.code)
        }
        let said = "\(error)"
        return said.contains("(SQLSTATE 57P01)") || said.contains("(SQLSTATE 08")
    }

    private static func acknowledge(_ note: String, out: String) {
        let fd = open(out, O_WRONLY | O_APPEND | O_CREAT, 0o600)
        _ = (note + "\n").withCString { write(fd, $0, strlen($0)) }
        close(fd)
    }
}
