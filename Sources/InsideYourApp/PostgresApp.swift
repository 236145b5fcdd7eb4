import JobQ
import JobQPostgres
import Logging
import PostgresNIO

func placeOrderOnPostgres(client: PostgresClient, logger: Logger) async throws {
    // jobq's tables in the schema `jobq` of the application's database.
    let queue = try await JobQueue(postgres: "postgres://app@db.internal:5432/shop")

    try await client.withTransaction(logger: logger) { connection in
        try await connection.query("INSERT INTO orders (id) VALUES (7)", logger: logger)
        try await queue.enqueue(SendReceipt.self, .init(order: 7), in: connection)
    }
}
