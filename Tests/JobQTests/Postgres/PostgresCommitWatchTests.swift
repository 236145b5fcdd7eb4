import Foundation
import Logging
import PostgresNIO
import Synchronization
import Testing

@testable import JobQCore
@testable import JobQPostgres
@testable import JobQSQL

/// LISTEN/NOTIFY wakes a watcher at once; where notifications are lost (a pooler in
/// transaction mode), the watcher says so once and looks every poll interval instead.
@Suite("PostgreSQL commit watch", .enabled(if: PostgresTestServer.available, PostgresTestServer.skipReason))
struct PostgresCommitWatchTests {
    /// A pool stops only when its watch does: cancelled at any moment (connecting, starting to
    /// listen, probing, polling), the watch must end. A CI run once hung on a pool whose watch
    /// did not.
    @Test func aWatchCancelledAtAnyMomentEnds() async throws {
        let settings = try PostgresSettings(url: try #require(PostgresTestServer.url))
        let delays: [Int] = [0, 1, 2, 5, 10, 20, 30, 50, 80, 120, 200, 300, 500, 800, 1100, 1300]
        for delay in delays {
            let watch = PostgresCommitWatch(
                settings: settings, logger: PostgresTestServer.logger,
                channel: "jobq_test_\(UInt32.random(in: 0...UInt32.max))")
            let running = Task { await watch.run(pollInterval: .seconds(30), isBusy: { false }) {} }
            try await Task.sleep(for: .milliseconds(delay))
            running.cancel()
            try await within(.seconds(10), "the watch cancelled after \(delay)ms to end") { await running.value }
        }
    }

    /// The cause of the hang above: postgres-nio returned a connection whose connect had been
    /// cancelled during the handshake, with its socket already closing, and a query on it never
    /// answered. A connect cancelled at any moment either throws `CancellationError` or hands
    /// out a connection that answers.
    @Test func aConnectCancelledAtAnyMomentThrowsOrGivesAWorkingConnection() async throws {
        let settings = try PostgresSettings(url: try #require(PostgresTestServer.url))
        let connector = PostgresConnector(settings: settings, logger: PostgresTestServer.logger)
        var outcomes: [String: Int] = [:]
        // 60 cancels across the handshake, then 4 after a second: on a machine loaded by the rest
        // of the suite no connect finishes within 15 ms (a CI run saw 60 of 60 cancelled), and
        // the test must still see both outcomes.
        for step in 0..<64 {
            let attempt = Task { () -> String in
                do {
                    let connection = try await connector.connect()
                    defer { Task { try? await connection.close() } }
                    let rows = try await connection.query("SELECT 1", logger: PostgresTestServer.logger)
                    for try await _ in rows {}  // reading rows throws CancellationError once cancelled
                    return "answered"
                } catch is CancellationError {
                    return "cancelled"
                }
            }
            // Across the handshake: a loopback connect takes a few milliseconds.
            let delay: Duration = step < 60 ? .microseconds(250 * step) : .seconds(1)
            try await Task.sleep(for: delay)
            attempt.cancel()
            let outcome = try await within(.seconds(5), "the connect cancelled after \(delay) to end") {
                try await attempt.value
            }
            outcomes[outcome, default: 0] += 1
        }
        #expect(
            outcomes["cancelled", default: 0] > 0 && outcomes["answered", default: 0] > 0,
            "the cancels fell on both sides: \(outcomes)")
    }

    @Test func aNotificationFromAnotherConnectionWakesTheWatcherAtOnce() async throws {
        let settings = try PostgresSettings(url: try #require(PostgresTestServer.url))
        let reports = Reports()
        let watch = PostgresCommitWatch(
            settings: settings, logger: PostgresTestServer.logger,
            channel: "jobq_test_\(UInt32.random(in: 0...UInt32.max))")
        let running = Task { await watch.run(pollInterval: .seconds(30), isBusy: { false }) { reports.add() } }
        defer { running.cancel() }
        let sender = try await PostgresConnector(settings: settings, logger: PostgresTestServer.logger).connect()
        defer { Task { try? await sender.close() } }
        func notify() async throws {
            try await sender.query(
                PostgresQuery(unsafeSQL: "SELECT pg_notify('\(watch.channel)', '')"), logger: PostgresTestServer.logger)
        }
        // Until the watcher listens (it connects and probes first; slower on a busy machine).
        let started = ContinuousClock.now
        while reports.count == 0, ContinuousClock.now - started < .seconds(20) {
            try await notify()
            try await Task.sleep(for: .milliseconds(50))
        }
        try await Task.sleep(for: .milliseconds(100))
        var latencies: [Duration] = []
        for _ in 0..<5 {
            let before = reports.count
            let sent = ContinuousClock.now
            try await notify()
            while reports.count == before, ContinuousClock.now - sent < .seconds(10) {
                try await Task.sleep(for: .milliseconds(1))
            }
            latencies.append(ContinuousClock.now - sent)
        }
        // The poll is 30s apart: anything within 5 s came from the notification (alone, each
        // takes about a millisecond; the loaded start of a CI run once took over a second).
        #expect(latencies.allSatisfy { $0 < .seconds(5) }, "reported after the notify: \(latencies)")
    }

    @Test func lostNotificationsAreSaidOnceAndThePollTakesOver() async throws {
        let settings = try PostgresSettings(url: try #require(PostgresTestServer.url))
        let reports = Reports()
        let logs = LogRecorder()
        let logger = Logger(label: "test") { _ in logs }
        // The probe goes to a channel nobody listens on: as if a pooler had dropped it.
        let watch = PostgresCommitWatch(
            settings: settings, logger: logger, channel: "jobq_test_\(UInt32.random(in: 0...UInt32.max))",
            probeChannel: "nobody_listens")
        let running = Task { await watch.run(pollInterval: .seconds(1), isBusy: { false }) { reports.add() } }
        // The probe waits a second for its notification; connecting may take longer on a busy machine.
        let started = ContinuousClock.now
        while !logs.messages.contains(where: { $0.contains("notifications do not arrive") }),
            ContinuousClock.now - started < .seconds(60)
        {
            try await Task.sleep(for: .milliseconds(20))
        }
        // Three reports more: the poll took over. Not faster than one a second (the first may
        // come at once); a loaded machine may make them slower, which says nothing here.
        let before = reports.count
        let polling = ContinuousClock.now
        while reports.count < before + 3, ContinuousClock.now - polling < .seconds(60) {
            try await Task.sleep(for: .milliseconds(20))
        }
        let took = ContinuousClock.now - polling
        let polled = reports.count - before
        running.cancel()
        await running.value
        let warnings = logs.messages.filter { $0.contains("notifications do not arrive") }
        #expect(warnings.count == 1, "\(logs.messages)")
        #expect(polled >= 3, "the poll took over: \(polled) reports in \(took)")
        #expect(took >= .milliseconds(1_500), "the poll reported once a second, not faster: \(polled) in \(took)")
    }
}

extension PostgresCommitWatchTests {
    /// Every commit watch of a process shares one LISTEN connection: 64 event feeds open at once
    /// (as 64 dashboard live streams would be) hold one, not 64; each still hears another
    /// store's commit; and the connection closes when the last feed ends.
    @Test func sixtyFourFeedsShareOneListenConnection() async throws {
        let settings = try await PostgresTestDatabases.shared.fresh()
        let logger = PostgresTestServer.logger
        let follower = try await JobQueue(postgres: settings, logger: logger)
        let writer = try await JobQueue(postgres: settings, logger: logger)
        let cursor = try await follower.latestEventID()
        let heard = Reports()
        let feeds = (0..<64).map { _ in
            Task {
                for try await _ in follower.events(EventFilter(kinds: [.enqueued]), since: cursor) { heard.add() }
            }
        }
        @Sendable func listening() async throws -> Int {
            try await PostgresTestServer.rows(
                settings,
                """
                SELECT count(*)::int FROM pg_stat_activity
                WHERE datname = current_database() AND application_name = 'jobq-listen'
                """, as: Int.self
            ).first ?? -1
        }
        // Generous waits: 64 feeds read the new event over the store's few connections, and a CI
        // run starts every suite at once (there, 20 s was once not enough for all 64 to read).
        try await eventually(.seconds(60), "the feeds to listen") { try await listening() > 0 }
        try await writer.enqueue(try JobRequest(executor: "echo", payloadJSON: "{}"))
        try await eventually(.seconds(60), "every feed to see the job") { heard.count == 64 }
        let all =
            try await PostgresTestServer.rows(
                settings,
                "SELECT count(*)::int FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()",
                as: Int.self
            ).first ?? -1
        #expect(try await listening() == 1)
        // Two stores' connections (at most their budget of 3 each, LISTEN included), and the
        // LISTEN connection the process shares.
        #expect(all <= 6, "\(all) connections for 64 feeds")
        for feed in feeds { feed.cancel() }
        // As long as the other waits: 64 cancelled feeds end on a loaded machine's pool (a CI
        // start took longer than 10 s).
        try await eventually(.seconds(30), "the LISTEN connection to close") { try await listening() == 0 }
    }
}

private final class Reports: Sendable {
    private let value = Mutex(0)
    func add() { value.withLock { $0 += 1 } }
    var count: Int { value.withLock { $0 } }
}
