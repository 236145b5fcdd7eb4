import Foundation
import Testing

@testable import JobQCore
@testable import JobQSQL
@testable import JobQSQLite

/// The filter language on every store: one table of expressions and the jobs each must match,
/// so that SQLite and PostgreSQL are held to the same answers.
@Suite("Finding jobs by a filter")
struct FindingJobsTests {
    /// Eight jobs whose fields and payloads each term below tells apart; `ids[n]` is job n.
    private static func fill(_ queue: JobQueue) async throws -> [JobID] {
        func request(_ executor: String, _ payload: String, _ options: JobOptions = .init()) throws -> JobRequest {
            try JobRequest(executor: executor, payloadJSON: payload, options: options)
        }
        let later = JobOptions(queue: "later")
        var weekly = JobOptions(queue: "later", priority: 5, name: "weekly", partition: "p1")
        weekly.batch = "b1"
        var scheduled = JobOptions(queue: "later", runAt: Date().addingTimeInterval(3600))
        scheduled.unique = UniqueKey("u1")
        let requests = [
            try request(
                "fail", #"{"message":"connection timeout after 5s","customer":"acme","amount":150}"#,
                .init(maxAttempts: 1)),
            try request("sum", #"{"a":1,"b":2,"customer":"acme","amount":50.5}"#),
            try request("mail", #"{"customer":"bob","amount":"150","vip":true}"#, weekly),
            try request("mail", #"{"customer":"Acme","note":null,"nested":{"id":7}}"#, later),
            try request("mail", "[1,2]", later),
            try request("echo", #""text""#, later),
            try request("echo", #"{"customer":"é","amount":-2000}"#, scheduled),
            try request("mail", #"{"customer":"acme","vip":false,"amount":1e2}"#, later)
        ]
        try await queue.createBatch("b1")
        var ids: [JobID] = []
        for request in requests { ids.append(try await queue.enqueue(request).id) }
        try await work(queue)  // job 0 dies, job 1 succeeds
        _ = try await queue.cancel(ids[7])
        return ids
    }

    /// Expressions and the jobs (by index) they match.
    private static func table(_ ids: [JobID]) -> [(String, [Int])] {
        let inHalfAnHour = ISO8601.string(Date().addingTimeInterval(1800))
        return [
            ("", Array(0...7)),
            ("state:dead", [0]),
            ("state:dead,succeeded", [0, 1]),
            ("-state:dead,succeeded", [2, 3, 4, 5, 6, 7]),
            ("queue:later executor:mail", [2, 3, 4, 7]),
            ("executor~ai", [0, 2, 3, 4, 7]),
            ("error~timeout", [0]),
            ("error~Timeout", []),
            ("-error~timeout", [1, 2, 3, 4, 5, 6, 7]),
            (#"name:"weekly" priority>=5 partition:p1 batch:b1"#, [2]),
            ("unique:u1", [6]),
            ("attempt:1", [0, 1]),
            ("attempt>0 -state:succeeded", [0]),
            ("id>\(ids[5])", [6, 7]),
            ("id:\(ids[1]),\(ids[3])", [1, 3]),
            (#"/customer = "acme""#, [0, 1, 7]),
            (#"/customer != "acme""#, [2, 3, 4, 5, 6]),
            (#"-/customer = "acme" queue:later"#, [2, 3, 4, 5, 6]),
            ("/amount > 100", [0]),
            ("/amount >= 100", [0, 7]),
            ("/amount = 150", [0]),
            (#"/amount = "150""#, [2]),
            ("/amount < 0", [6]),
            ("/amount<100.5", [1, 6, 7]),
            ("/amount = 1e2", [7]),
            ("/vip = true", [2]),
            ("/vip = false", [7]),
            ("/note = null", [3]),
            ("/note exists", [3]),
            ("/nested/id = 7", [3]),
            ("-/customer exists", [4, 5]),
            (#"/customer > "b""#, [2, 6]),
            (#"/customer < "B""#, [3]),
            (#"/customer = "é""#, [6]),
            ("finished<1h", [0, 1, 7]),
            ("finished>1h", []),
            ("-finished<1h", [2, 3, 4, 5, 6]),
            ("created>=2000-01-01", Array(0...7)),
            ("created<2000-01-01T00:00:00Z", []),
            ("run>=\(inHalfAnHour)", [6]),
            ("state:cancelled /vip = false", [7]),
            (#"queue:later /customer = "acme" -state:cancelled"#, [])
        ]
    }

    @Test(arguments: TestStore.all) func everyExpressionMatchesTheSameJobsOnEveryStore(store: TestStore) async throws {
        let queue = try await store.open()
        let ids = try await Self.fill(queue)
        for (expression, expected) in Self.table(ids) {
            let filter = try JobFilter(expression)
            let found = try await queue.jobs(where: filter, limit: 100).map(\.id)
            #expect(found == expected.map { ids[$0] }, "\(store): \(expression)")
            #expect(try await queue.count(where: filter) == expected.count, "\(store): count of \(expression)")
        }
    }

    /// With indexes on the members the table compares, every expression matches the same jobs,
    /// and an equality on an indexed member is looked up by its index.
    @Test(arguments: TestStore.all) func payloadIndexesChangeNoAnswerAndServeLookups(store: TestStore) async throws {
        let queue = try await store.open()
        let ids = try await Self.fill(queue)
        for pointer in ["/customer", "/amount", "/vip", "/note", "/nested/id"] {
            try await queue.addPayloadIndex(pointer)
        }
        let again = try await queue.addPayloadIndex("/customer")
        #expect(
            try await queue.payloadIndexes().map(\.pointer) == ["/amount", "/customer", "/nested/id", "/note", "/vip"])
        #expect(try await queue.payloadIndexes().first { $0.pointer == "/customer" } == again, "adding twice keeps one")
        for (expression, expected) in Self.table(ids) {
            let found = try await queue.jobs(where: try JobFilter(expression), limit: 100).map(\.id)
            #expect(found == expected.map { ids[$0] }, "\(store) with indexes: \(expression)")
        }

        let filter = try JobFilter(#"/customer = "acme""#)
        let sqlStore = try #require(queue.store as? any SQLStore)
        let plan = try await Self.plan(sqlStore, filter)
        #expect(plan.contains(SQLiteStore.indexName("/customer")), "\(store): \(plan)")

        try await queue.removePayloadIndex("/customer")
        #expect(try await queue.payloadIndexes().count == 4)
        #expect(!(try await Self.plan(sqlStore, filter)).contains(SQLiteStore.indexName("/customer")))
        await #expect(throws: JobQueueError.self) { try await queue.removePayloadIndex("/customer") }
        await #expect(throws: JobQueueError.self) { try await queue.addPayloadIndex("customer") }
        await #expect(throws: JobQueueError.self) { try await queue.addPayloadIndex("/items/0") }
        #expect(try await queue.jobs(where: filter).map(\.id) == [ids[0], ids[1], ids[7]])
    }

    /// The store's plan for a count by `filter`, one line per step. PostgreSQL is told to
    /// prefer indexes: its planner reads a table of eight rows whole, index or not.
    private static func plan(_ store: any SQLStore, _ filter: JobFilter) async throws -> String {
        try await Self.plan(store, filter, now: StoreSQL.now())
    }

    private static func plan<S: SQLStore>(_ store: S, _ filter: JobFilter, now: Double) async throws -> String {
        try await store.write { db in
            let (condition, arguments) = FilterSQL.condition(filter, db.dialect, now: now)
            let sql = "SELECT COUNT(*) FROM jobq_jobs WHERE \(condition)"
            switch db.dialect {
            case .sqlite:
                return try db.fetchRows(sql: "EXPLAIN QUERY PLAN " + sql, arguments: arguments).map { $0.string(3) }
                    .joined(separator: "\n")
            case .postgres:
                try db.execute(sql: "SET LOCAL enable_seqscan = off")
                return try db.fetchAll(String.self, sql: "EXPLAIN " + sql, arguments: arguments).joined(separator: "\n")
            }
        }
    }

    @Test(arguments: TestStore.all) func pagesFollowIDOrderAndTheDashboardQueryCombinesItsFields(store: TestStore)
        async throws
    {
        let queue = try await store.open()
        let ids = try await Self.fill(queue)
        let filter = try JobFilter("queue:later")
        var pages: [[JobID]] = []
        var after: JobID?
        while true {
            let page = try await queue.jobs(where: filter, limit: 4, after: after).map(\.id)
            guard !page.isEmpty else { break }
            pages.append(page)
            after = page.last
        }
        #expect(pages == [Array(ids[2...5]), Array(ids[6...7])])

        var query = JobQuery(executor: "mail", limit: 2)
        query.filter = try JobFilter(#"-/customer = "bob""#)
        let newest = try await queue.jobs(matching: query).map(\.id)
        #expect(newest == [ids[7], ids[4]])
        query.before = newest.last
        #expect(try await queue.jobs(matching: query).map(\.id) == [ids[3]])
        await #expect(throws: JobQueueError.self) { try await queue.jobs(where: .all, limit: 10_001) }
    }

    /// Values reach the store as parameters: text that would break a spliced statement is
    /// only ever compared.
    @Test(arguments: TestStore.all) func valuesAreBoundNotSpliced(store: TestStore) async throws {
        let queue = try await store.open()
        let hostile = #"x' OR 1=1 --"#
        let job = try await queue.enqueue(
            try JobRequest(executor: "echo", payloadJSON: #"{"q":"x' OR 1=1 --"}"#, options: .init(name: hostile)))
        _ = try await queue.enqueue(try JobRequest(executor: "echo", payloadJSON: "{}"))
        let byName = try JobFilter("name:" + JSONText.string(hostile))
        #expect(try await queue.jobs(where: byName).map(\.id) == [job.id])
        #expect(try await queue.jobs(where: JobFilter(#"/q = "x' OR 1=1 --""#)).map(\.id) == [job.id])
        #expect(try await queue.count(where: JobFilter(#"error~"'); DROP TABLE jobq_jobs; --""#)) == 0)
        #expect(try await queue.count(where: .all) == 2)
    }
}
