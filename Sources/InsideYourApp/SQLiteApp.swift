// The examples of the DocC article "Inside your app" (InsideYourApp.md), compiled as written:
// a test checks that every Swift block of the article is in these files.
import GRDB
import JobQ

struct SendReceipt: Executor {
    static let name = "send-receipt"
    struct Input: Codable, Sendable { var order: Int }
    struct Output: Codable, Sendable { var sent: Bool }
    func run(_ input: Input, context: JobContext) async throws -> Output { Output(sent: true) }
}

func placeOrderOnSQLite() async throws {
    var configuration = Configuration()
    configuration.busyMode = .timeout(10)  // jobq's workers write to the same file
    let dbPool = try DatabasePool(path: "app.sqlite", configuration: configuration)
    let queue = try JobQueue(path: "app.sqlite")  // jobq's tables in the same file

    try await dbPool.write { db in
        try db.execute(sql: "INSERT INTO orders (id) VALUES (?)", arguments: [7])
        try queue.enqueue(SendReceipt.self, .init(order: 7), in: db)  // commits or rolls back with it
    }
}
