import Foundation
import GRDB
import JobQ
import JobQPostgres
import Logging
import PostgresNIO
import Synchronization

/// Reads the store for the chaos checks: plain SQL on either store, one value or rows.
protocol ChaosReader: Sendable {
    /// The first column of the first row as an integer; nil when there is none or it is NULL.
    func int(_ sql: String, _ arguments: [String]) throws -> Int?
    func string(_ sql: String) throws -> String?
    /// The first column of every row, as ids.
    func ids(_ sql: String) throws -> [Int64]
    /// Rows of a name and a count.
    func pairs(_ sql: String) throws -> [(name: String, count: Int)]
}

extension ChaosReader {
    func int(_ sql: String) throws -> Int? { try int(sql, []) }
}

struct SQLiteReader: ChaosReader {
    let queue: DatabaseQueue

    /// Read-only unless `writable` (the run's own setup: its audit triggers).
    init(path: String, writable: Bool = false) throws {
        var configuration = Configuration()
        configuration.readonly = !writable
        configuration.busyMode = .timeout(10)
        queue = try DatabaseQueue(path: path, configuration: configuration)
    }

    func int(_ sql: String, _ arguments: [String]) throws -> Int? {
        guard !queue.configuration.readonly else {
            return try queue.read { try Int.fetchOne($0, sql: sql, arguments: StatementArguments(arguments)) }
        }
        return try queue.write { try Int.fetchOne($0, sql: sql, arguments: StatementArguments(arguments)) }
    }

    func string(_ sql: String) throws -> String? { try queue.read { try String.fetchOne($0, sql: sql) } }

    func ids(_ sql: String) throws -> [Int64] { try queue.read { try Int64.fetchAll($0, sql: sql) } }

    func pairs(_ sql: String) throws -> [(name: String, count: Int)] {
        try queue.read { try Row.fetchAll($0, sql: sql).map { ($0[0] as String, $0[1] as Int) } }
    }
}

/// One connection, used from the chaos run's main thread (which may block on it).
final class PostgresReader: ChaosReader, @unchecked Sendable {
    // Unchecked: used from the main thread only.
    private var connection: PostgresConnection
    private let logger = Logger(label: "jobq.chaos")
    private let connector: PostgresConnector
    /// The checks name jobq's tables as its SQL does (`jobq_jobs`): the store's schema's here.
    private let names: SchemaNames

    init(url: String) throws {
        let settings = try PostgresSettings(url: url)
        names = settings.schemaNames
        connector = PostgresConnector(settings: settings, logger: logger)
        connection = try connector.connectBlocking()
    }

    // A connection must be closed before it goes (postgres-nio asserts it in debug builds).
    deinit { try? connection.close().wait() }

    /// A read on a connection the server ended (a restart) is read again on a new one.
    private func rows(_ sql: String, _ arguments: [String]) throws -> [PostgresRow] {
        var binds = PostgresBindings()
        for argument in arguments { binds.append(argument) }
        let query = PostgresQuery(unsafeSQL: names.qualified(sql), binds: binds)
        do {
            if connection.isClosed { throw Unanswered() }
            return try answer(query)
        } catch  where connection.isClosed || error is Unanswered {
            try? connection.close().wait()
            connection = try connector.connectBlocking()
            return try answer(query)
        }
    }

    private struct Unanswered: Error {}

    /// A query sent as the server closed the connection is never answered (postgres-nio neither
    /// answers nor fails it): given up after 5 s.
    private func answer(_ query: PostgresQuery) throws -> [PostgresRow] {
        let answer = connection.eventLoop.makePromise(of: PostgresQueryResult.self)
        connection.query(query, logger: logger).cascade(to: answer)
        let timeout = connection.eventLoop.scheduleTask(in: .seconds(5)) { answer.fail(Unanswered()) }
        defer { timeout.cancel() }
        return try answer.futureResult.wait().rows
    }

    func int(_ sql: String, _ arguments: [String]) throws -> Int? {
        guard let cell = try rows(sql, arguments).first?.first, cell.bytes != nil else { return nil }
        if cell.dataType == .numeric { return NSDecimalNumber(decimal: try cell.decode(Decimal.self)).intValue }
        return try cell.decode(Int.self)
    }

    func string(_ sql: String) throws -> String? {
        try rows(sql, []).first?.first.flatMap { try $0.decode(String?.self) }
    }

    func ids(_ sql: String) throws -> [Int64] { try rows(sql, []).map { try $0.decode(Int64.self) } }

    func pairs(_ sql: String) throws -> [(name: String, count: Int)] {
        try rows(sql, []).map { row in
            let (name, count) = try row.decode((String, Int).self)
            return (name, count)
        }
    }
}

/// Follows the event feed through `JobQueue.events(after:)` for the whole run, on a task of its
/// own, and hands over every id it saw when asked to finish.
final class EventFollower: Sendable {
    private let stop = Atomic<Bool>(false)
    private let seen = Mutex<[Int64]>([])
    private let done = DispatchSemaphore(value: 0)

    init(db: String, onPostgres: Bool) {
        Task.detached { [self] in
            do {
                let queue = onPostgres ? try await JobQueue(postgres: db) : try JobQueue(path: db)
                var cursor: Int64 = 0
                var failingSince: ContinuousClock.Instant?
                while true {
                    let stopping = stop.load(ordering: .acquiring)
                    let page: [JobEvent]
                    do {
                        page = try await queue.events(after: cursor, limit: 1000)
                        failingSince = nil
                    } catch {
                        // A read the server's restart failed: read again from the same cursor,
                        // for up to a minute.
                        let since = failingSince ?? .now
                        failingSince = since
                        if ContinuousClock.now - since > .seconds(60) { throw error }
                        try await Task.sleep(for: .milliseconds(100))
                        continue
                    }
                    seen.withLock { $0 += page.map(\.id) }
                    cursor = page.last?.id ?? cursor
                    if stopping && page.isEmpty { break }
                    if page.isEmpty { try await Task.sleep(for: .milliseconds(5)) }
                }
            } catch {
                print("chaos: the event follower failed: \(error)")
            }
            done.signal()
        }
    }

    /// Reads to the end of the feed once more, then returns every id seen, in the order seen.
    /// Call it after the writers stopped.
    func finish() -> [Int64] {
        stop.store(true, ordering: .releasing)
        done.wait()
        return seen.withLock { $0 }
    }
}
