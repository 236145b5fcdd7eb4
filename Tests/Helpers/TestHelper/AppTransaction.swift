import Foundation
import GRDB
import JobQ
import JobQPostgres
import Logging
import PostgresNIO

/// An application that writes an order and enqueues its job in one transaction, says so on
/// standard output, and waits (holding the transaction open) until the test kills it.
enum AppTransaction {
    static func enqueueAndHang(db: String) async throws {
        if db.hasPrefix("postgres") {
            let logger = Logger(label: "app")
            let settings = try PostgresSettings(url: db)
            let queue = try await JobQueue(postgres: settings, logger: logger)
            let connection = try await PostgresConnector(settings: settings, logger: logger).connect()
            try await connection.query("BEGIN", logger: logger)
            try await connection.query("INSERT INTO public.app_orders (note) VALUES ('killed')", logger: logger)
            try await queue.enqueue(JobRequest(executor: "echo", payloadJSON: #"{"order":"killed"}"#), in: connection)
            announce()
            try await Task.sleep(for: .seconds(600))
        } else {
            let queue = try JobQueue(path: db)
            var configuration = Configuration()
            configuration.busyMode = .timeout(10)
            let pool = try DatabasePool(path: db, configuration: configuration)
            try await pool.write { database in
                try database.execute(sql: "INSERT INTO app_orders (note) VALUES ('killed')")
                try queue.enqueue(JobRequest(executor: "echo", payloadJSON: #"{"order":"killed"}"#), in: database)
                announce()
                Thread.sleep(forTimeInterval: 600)
            }
        }
    }

    private static func announce() {
        FileHandle.standardOutput.write(Data("enqueued in the open transaction\n".utf8))
    }
}
