import Foundation
import JobQCore
import JobQSQL
import Logging
import PostgresNIO
import Synchronization

/// One connection to the server, used by one transaction at a time from a thread of its own:
/// every statement blocks that thread until the server answers, so that jobq's SQL (shared
/// with SQLite, synchronous) runs unchanged.
final class PostgresSession: @unchecked Sendable {
    // Unchecked: a session is only ever used on its own serial queue (see `PostgresServer`).
    let connection: PostgresConnection
    /// When the connection opened (a lost one opened before an outage ended was cut by it).
    let opened = ContinuousClock.now
    private let logger: Logger
    private let inFlight = InFlightStatement()
    private let watchdog: RepeatedTask?

    /// The store's schema: every statement is sent with jobq's table names in it.
    let names: SchemaNames

    /// `deadline`: how long a statement's answer may take before the connection is given up
    /// (the server's `statement_timeout` and a margin); nil waits as long as it takes.
    init(connection: PostgresConnection, names: SchemaNames, logger: Logger, deadline: Duration?) {
        self.connection = connection
        self.names = names
        self.logger = logger
        // The server ends a statement at its statement_timeout; no answer well after that means
        // the server or the network went away, and TCP may take many minutes to say so.
        // Closing the connection fails the query now; the next transaction reconnects. One
        // check a second for the connection's life: a timer per statement cost a hop to the
        // event loop and back on every statement of the hot path.
        // A statement sent as the server closed the connection (a restart) is never answered
        // nor failed by postgres-nio: the same check fails a blocking statement's wait then.
        let limitNanoseconds = deadline.map { UInt64($0.inSeconds * 1_000_000_000) }
        watchdog = connection.eventLoop.scheduleRepeatedTask(initialDelay: .seconds(1), delay: .seconds(1)) {
            [inFlight] task in
            if connection.isClosed {
                task.cancel()
                inFlight.failWaits()
                return
            }
            let since = inFlight.since.load(ordering: .relaxed)
            if let limitNanoseconds, inFlight.count.load(ordering: .relaxed) > 0,
                DispatchTime.now().uptimeNanoseconds &- since > limitNanoseconds
            {
                task.cancel()
                connection.close().whenComplete { _ in inFlight.failWaits() }
            }
        }
    }

    deinit { watchdog?.cancel() }

    /// Closes the connection, holding it until it is closed (postgres-nio requires a connection
    /// to be closed before it is released).
    func close() {
        let connection = self.connection
        connection.close().whenComplete { _ in withExtendedLifetime(connection) {} }
    }

    var isClosed: Bool { connection.isClosed }

    func run(_ sql: String, _ values: [SQLValue]) throws -> StatementResult {
        let result: PostgresQueryResult
        do {
            let query = try Self.query(names.qualified(sql), values)
            inFlight.sent()
            defer { inFlight.answered() }
            let answer = connection.eventLoop.makePromise(of: PostgresQueryResult.self)
            let wait = inFlight.waiting(answer)
            defer { inFlight.done(wait) }
            connection.query(query, logger: logger).cascade(to: answer)
            // Closed already (between the slot's check and now): the watchdog may have gone.
            if connection.isClosed { answer.fail(ClosedUnanswered()) }
            result = try answer.futureResult.wait()
        } catch {
            throw PostgresStoreError.from(error, sql: sql)
        }
        return Self.result(result.rows, changes: result.metadata.rows ?? 0)
    }

    /// ``run(_:_:)`` from Swift concurrency, without a thread of its own: for statements that
    /// commit on their own (no transaction holds the connection), which may overlap on it.
    /// Throws postgres-nio's error as it is (``PostgresStoreError/from(_:sql:)`` says it).
    func runAsync(_ sql: String, _ values: [SQLValue]) async throws -> StatementResult {
        let query = try Self.query(names.qualified(sql), values)
        inFlight.sent()
        defer { inFlight.answered() }
        let rows = try await connection.query(query, logger: logger)
        var collected: [PostgresRow] = []
        for try await row in rows { collected.append(row) }
        return Self.result(collected, changes: collected.count)
    }

    /// ``runAsync(_:_:)`` for one of the hot path's fixed statements, prepared once per
    /// connection (by name) and then only bound and run: planning the statement each time cost
    /// as much as running it.
    func runPrepared<Text: StatementText>(_ text: Text.Type, _ values: [SQLValue]) async throws -> StatementResult {
        let statement = PreparedText<Text>(bindings: try Self.bindings(values))
        inFlight.sent()
        defer { inFlight.answered() }
        var collected: [PostgresRow] = []
        for try await row in try await connection.execute(statement, logger: logger) { collected.append(row) }
        return Self.result(collected, changes: collected.count)
    }

    /// One statement on a connection jobq does not hold (the application's), from Swift
    /// concurrency; `sql` is already qualified. Throws postgres-nio's error as it is.
    static func runOnce(_ sql: String, _ values: [SQLValue], on connection: PostgresConnection, logger: Logger)
        async throws -> StatementResult
    {
        let rows = try await connection.query(try query(sql, values), logger: logger)
        var collected: [PostgresRow] = []
        for try await row in rows { collected.append(row) }
        return result(collected, changes: collected.count)
    }

    /// One of the hot path's statements on the application's connection, prepared there once
    /// (``CallersPreparedText``) for the store `names`. Throws postgres-nio's error as it is.
    static func runPreparedOnce<Text: StatementText>(
        _ text: Text.Type, _ values: [SQLValue], names: SchemaNames, on connection: PostgresConnection, logger: Logger
    ) async throws -> StatementResult {
        let statement = CallersPreparedText<Text>(bindings: try bindings(values))
        let rows = try await CallersStatementStore.$names.withValue(names) {
            try await connection.execute(statement, logger: logger)
        }
        var collected: [PostgresRow] = []
        for try await row in rows { collected.append(row) }
        return result(collected, changes: collected.count)
    }

    private static func query(_ sql: String, _ values: [SQLValue]) throws -> PostgresQuery {
        PostgresQuery(unsafeSQL: sql, binds: try bindings(values))
    }

    /// Every value as text, typed by the server from where it stands.
    private static func bindings(_ values: [SQLValue]) throws -> PostgresBindings {
        var binds = PostgresBindings(capacity: values.count)
        for value in values {
            if let text = value.text { try binds.append(InferredText(text: text)) } else { binds.appendNull() }
        }
        return binds
    }

    private static func result(_ rows: some Collection<PostgresRow>, changes: Int) -> StatementResult {
        var names: [String] = []
        var values: [[SQLValue]] = []
        values.reserveCapacity(rows.count)
        for row in rows {
            var cells: [SQLValue] = []
            cells.reserveCapacity(row.count)
            for cell in row {
                if values.isEmpty { names.append(cell.columnName) }
                cells.append(Self.value(cell))
            }
            values.append(cells)
        }
        return StatementResult(names: names, rows: values, changes: changes)
    }

    /// A result column as one of SQLite's storage classes.
    static func value(_ cell: PostgresCell) -> SQLValue {
        guard var bytes = cell.bytes else { return .null }
        if cell.format == .text {
            return .text(bytes.readString(length: bytes.readableBytes) ?? "")
        }
        switch cell.dataType {
        case .bool:
            return .integer(bytes.readInteger(as: UInt8.self) == 1 ? 1 : 0)
        case .int2:
            return .integer(Int64(bytes.readInteger(as: Int16.self) ?? 0))
        case .int4:
            return .integer(Int64(bytes.readInteger(as: Int32.self) ?? 0))
        case .int8:
            return .integer(bytes.readInteger(as: Int64.self) ?? 0)
        case .float4:
            return .real(Double(Float(bitPattern: bytes.readInteger(as: UInt32.self) ?? 0)))
        case .float8:
            return .real(Double(bitPattern: bytes.readInteger(as: UInt64.self) ?? 0))
        case .numeric:
            let decimal = (try? cell.decode(Decimal.self)) ?? 0
            let number = NSDecimalNumber(decimal: decimal)
            return decimal == Decimal(number.int64Value) ? .integer(number.int64Value) : .real(number.doubleValue)
        case .jsonb:
            // The binary form is a version byte (1) and the text.
            _ = bytes.readInteger(as: UInt8.self)
            return .text(bytes.readString(length: bytes.readableBytes) ?? "")
        default:
            // text, varchar, name, json: the text itself.
            return .text(bytes.readString(length: bytes.readableBytes) ?? "")
        }
    }
}

/// Statements waiting for their answers, and since when the connection has been waiting without
/// one (nanoseconds of the monotonic clock): what a session's watchdog reads. Under a steady
/// stream of overlapping statements the time moves with every answer, so only a connection that
/// stops answering is given up.
private final class InFlightStatement: Sendable {
    let count = Atomic<Int>(0)
    let since = Atomic<UInt64>(0)
    /// The answers blocking statements wait for, by number: failed when the connection is found
    /// closed with them pending (a completed promise ignores a second completion).
    private let waits = Mutex<(next: Int, pending: [Int: EventLoopPromise<PostgresQueryResult>])>((0, [:]))

    func waiting(_ answer: EventLoopPromise<PostgresQueryResult>) -> Int {
        waits.withLock { waits in
            waits.next += 1
            waits.pending[waits.next] = answer
            return waits.next
        }
    }

    func done(_ wait: Int) {
        _ = waits.withLock { $0.pending.removeValue(forKey: wait) }
    }

    func failWaits() {
        let pending = waits.withLock { waits in
            defer { waits.pending = [:] }
            return Array(waits.pending.values)
        }
        for answer in pending { answer.fail(ClosedUnanswered()) }
    }

    func sent() {
        if count.add(1, ordering: .relaxed).oldValue == 0 {
            since.store(DispatchTime.now().uptimeNanoseconds, ordering: .relaxed)
        }
    }

    func answered() {
        since.store(DispatchTime.now().uptimeNanoseconds, ordering: .relaxed)
        count.subtract(1, ordering: .relaxed)
    }
}

/// A parameter sent as text with no type, so the server gives it the type of where it stands
/// (an integer column, a `json` one, a comparison with a `double precision`): SQLite's loose
/// typing, which jobq's store SQL relies on.
private struct InferredText: PostgresEncodable {
    let text: String
    static var psqlType: PostgresDataType { PostgresDataType(0) }
    static var psqlFormat: PostgresFormat { .text }

    func encode<JSONEncoder: PostgresJSONEncoder>(
        into byteBuffer: inout ByteBuffer, context: PostgresEncodingContext<JSONEncoder>
    ) {
        byteBuffer.writeString(text)
    }
}

/// A statement the server refused or a connection that failed, said without the password.
enum PostgresStoreError {
    /// Whether the server answered with an error (the connection is fine), rather than the
    /// connection failing (its state unknown: it is given up).
    static func isServerAnswer(_ error: any Error) -> Bool {
        (error as? PSQLError)?.serverInfo?[.sqlState] != nil
    }

    /// The SQLSTATE of a server's refusal; nil for anything else.
    static func sqlState(_ error: any Error) -> String? {
        (error as? PSQLError)?.serverInfo?[.sqlState]
    }

    static func from(_ error: any Error, sql: String) -> any Error {
        if let error = error as? PSQLError, let state = error.serverInfo?[.sqlState] {
            let message = error.serverInfo?[.message] ?? "\(error.code)"
            // Integrity violations are jobq's to turn into clear errors (or bugs to fix): say which
            // statement, on one line (the message ends up in a log line, which readers split by line).
            let statement = sql.split(whereSeparator: \.isWhitespace).joined(separator: " ").prefix(300)
            return JobQueueError.storeUnavailable(
                "PostgreSQL refused a statement: \(message) (SQLSTATE \(state)) in: \(statement)")
        }
        return JobQueueError.storeUnavailable(
            "PostgreSQL connection failed: \(PostgresConnector.explain(error, otherwise: "08006")); check that the server runs"
        )
    }
}

/// A statement whose connection closed before it was answered.
struct ClosedUnanswered: Error, CustomStringConvertible {
    var description: String { "the connection closed before the statement was answered" }
}
