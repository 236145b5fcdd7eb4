import Foundation
import GRDB
import JobQPostgres
import Logging
import PostgresNIO

@testable import JobQCore
@testable import JobQSQL
@testable import JobQSQLite

/// The application's side of a store it shares: its own table `app_orders` and its own
/// connections to the store's database (a GRDB pool on the SQLite file; postgres-nio connections
/// on PostgreSQL), for the tests of enqueueing in the application's transaction.
final class AppSide: @unchecked Sendable {
    // Unchecked: the connections are used from one test at a time.
    let queue: JobQueue
    /// The store's `--db`: the SQLite file or the PostgreSQL URL.
    let location: String
    private let pool: DatabasePool?
    private let settings: PostgresSettings?
    private var connections: [PostgresConnection] = []
    private let logger = PostgresTestServer.logger

    /// What one application transaction writes through jobq, beside its order row.
    enum Write: Sendable {
        case enqueue([JobRequest])
        case submit(Workflow)
        case emit(String)
    }

    struct RolledBack: Error {}

    private init(queue: JobQueue, location: String, pool: DatabasePool?, settings: PostgresSettings?) {
        self.queue = queue
        self.location = location
        self.pool = pool
        self.settings = settings
    }

    /// A new store on a file (SQLite) or a database of its own (PostgreSQL), with the
    /// application's table beside jobq's.
    static func open(_ store: TestStore) async throws -> AppSide {
        switch store {
        case .sqlite:
            let path = try TemporaryStore().path
            let queue = try JobQueue(path: path)
            // jobq's workers write to the same file: the application waits for the write lock
            // as jobq's own connections do, instead of failing at once (GRDB's default).
            var configuration = Configuration()
            configuration.busyMode = .timeout(10)
            let pool = try DatabasePool(path: path, configuration: configuration)
            try await pool.write { db in
                try db.execute(sql: "CREATE TABLE app_orders (id INTEGER PRIMARY KEY, note TEXT NOT NULL)")
            }
            return AppSide(queue: queue, location: path, pool: pool, settings: nil)
        case .postgres:
            let settings = try await PostgresTestDatabases.shared.fresh()
            let queue = try await JobQueue(postgres: settings, logger: PostgresTestServer.logger)
            try await PostgresTestServer.execute(
                settings, "CREATE TABLE public.app_orders (id bigserial PRIMARY KEY, note text NOT NULL)")
            return AppSide(queue: queue, location: settings.description, pool: nil, settings: settings)
        }
    }

    /// A connection of the application's (PostgreSQL), one per concurrent task.
    private func connection(_ index: Int) async throws -> PostgresConnection {
        while connections.count <= index {
            connections.append(try await PostgresConnector(settings: settings!, logger: logger).connect())
        }
        return connections[index]
    }

    /// One application transaction: an order row, then `write` through jobq; committed, or
    /// rolled back when `rollback`. `lane` picks the PostgreSQL connection (one per task).
    @discardableResult
    func transaction(note: String, _ write: Write, rollback: Bool = false, lane: Int = 0) async throws -> [JobID] {
        if let pool {
            let queue = self.queue
            do {
                return try await pool.write { db -> [JobID] in
                    try db.execute(sql: "INSERT INTO app_orders (note) VALUES (?)", arguments: [note])
                    let ids: [JobID]
                    switch write {
                    case .enqueue(let requests): ids = try queue.enqueue(contentsOf: requests, in: db).map(\.id)
                    case .submit(let workflow): ids = [try queue.submit(workflow, in: db)]
                    case .emit(let event): ids = try queue.emit(event, in: db).jobs.map(\.id)
                    }
                    if rollback { throw RolledBack() }
                    return ids
                }
            } catch is RolledBack {
                return []
            }
        }
        let connection = try await connection(lane)
        try await connection.query("BEGIN", logger: logger)
        do {
            try await connection.query("INSERT INTO public.app_orders (note) VALUES (\(note))", logger: logger)
            let ids: [JobID]
            switch write {
            case .enqueue(let requests): ids = try await queue.enqueue(contentsOf: requests, in: connection).map(\.id)
            case .submit(let workflow): ids = [try await queue.submit(workflow, in: connection)]
            case .emit(let event): ids = try await queue.emit(event, in: connection).jobs.map(\.id)
            }
            try await connection.query(rollback ? "ROLLBACK" : "COMMIT", logger: logger)
            return rollback ? [] : ids
        } catch {
            _ = try? await connection.query("ROLLBACK", logger: logger)
            throw error
        }
    }

    /// One application transaction that enqueues `requests` beside an order row and commits:
    /// the jobs the enqueue returned.
    func enqueueReturningJobs(_ requests: [JobRequest]) async throws -> [Job] {
        let queue = self.queue
        if let pool {
            return try await pool.write { db in
                try db.execute(sql: "INSERT INTO app_orders (note) VALUES ('jobs')")
                return try queue.enqueue(contentsOf: requests, in: db)
            }
        }
        let connection = try await connection(0)
        try await connection.query("BEGIN", logger: logger)
        do {
            try await connection.query("INSERT INTO public.app_orders (note) VALUES ('jobs')", logger: logger)
            let jobs = try await queue.enqueue(contentsOf: requests, in: connection)
            try await connection.query("COMMIT", logger: logger)
            return jobs
        } catch {
            _ = try? await connection.query("ROLLBACK", logger: logger)
            throw error
        }
    }

    /// A durable function's step that inserts an order row with `note` in the application's
    /// transaction, its record committed with it (`JobContext.step(_:in:_:)`), and returns the
    /// row's id; `fail` throws after the insert, from the step's body. `connectionLane` picks
    /// the PostgreSQL connection (one per concurrent function).
    func committedStep(
        _ context: JobContext, _ name: String, note: String, fail: Bool = false, connectionLane: Int = 0
    ) async throws -> Int64 {
        struct BodyFailed: Error, CustomStringConvertible { var description: String { "the body failed" } }
        if let pool {
            return try await context.step(name, in: pool) { db -> Int64 in
                try db.execute(sql: "INSERT INTO app_orders (note) VALUES (?)", arguments: [note])
                if fail { throw BodyFailed() }
                return db.lastInsertedRowID
            }
        }
        let connection = try await connection(connectionLane)
        let logger = self.logger
        return try await context.step(name, in: connection) { connection -> Int64 in
            let rows = try await connection.query(
                "INSERT INTO public.app_orders (note) VALUES (\(note)) RETURNING id", logger: logger)
            var id: Int64 = -1
            for try await value in rows.decode(Int64.self) { id = value }
            if fail { throw BodyFailed() }
            return id
        }
    }

    /// The notes of the application's orders, in id order.
    func orders() async throws -> [String] {
        if let pool {
            return try await pool.read { try String.fetchAll($0, sql: "SELECT note FROM app_orders ORDER BY id") }
        }
        return try await PostgresTestServer.rows(
            settings!, "SELECT note FROM public.app_orders ORDER BY id", as: String.self)
    }

    /// Closes the application's connections (postgres-nio requires it before they go).
    func close() async {
        for connection in connections { try? await connection.close() }
        connections = []
        try? pool?.close()
    }
}
