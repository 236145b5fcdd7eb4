import Foundation
import Hummingbird
import JobQ
import Logging
import ServiceLifecycle
import Synchronization

/// jobq's web dashboard: queues, jobs, workflows and trees, schedules, triggers, batches and
/// tracking sets of one store, live from its event feed, with the operator's actions (retry,
/// cancel, delete, pause and resume a queue or a schedule, cancel a workflow).
///
/// Pages are HTML rendered on the server, readable without JavaScript; a small script served
/// from the binary (no CDN, no build step) refreshes the part of the page an event concerns.
/// Every action is a POST carrying a per-process form token and checked against the request's
/// origin; with an ``Options/accessToken`` every request must carry it (a cookie set by
/// `/login`, or `Authorization: Bearer`).
///
/// ```swift
/// let dashboard = Dashboard(queue: queue, options: .init(storeName: "jobs.sqlite"))
/// let router = Router()
/// dashboard.addRoutes(to: router)          // or run a DashboardServer
/// ```
public struct Dashboard: Sendable {
    public struct Options: Sendable {
        /// What the header says the store is (a path, or a redacted URL).
        public var storeName: String
        /// When set, every request must carry it; required when listening beyond loopback.
        public var accessToken: String?
        /// Pages without actions; every POST refused.
        public var readOnly: Bool
        /// Jobs per page of the jobs list.
        public var pageSize: Int
        /// Live update streams open at once; more are refused with 503.
        public var maximumStreams: Int

        public init(storeName: String, accessToken: String? = nil, readOnly: Bool = false, pageSize: Int = 50, maximumStreams: Int = 64) {
            self.storeName = storeName
            self.accessToken = accessToken
            self.readOnly = readOnly
            self.pageSize = pageSize
            self.maximumStreams = maximumStreams
        }
    }

    let queue: JobQueue
    let options: Options
    /// The token every form carries: random per process, never sent to another origin, so a
    /// page elsewhere cannot forge an action.
    let formToken: String
    let streams: StreamCounter

    public init(queue: JobQueue, options: Options) {
        self.queue = queue
        self.options = options
        formToken = Self.randomToken()
        streams = StreamCounter(limit: options.maximumStreams)
    }

    /// Adds the dashboard's pages, actions, live stream and assets to `router`, behind its
    /// access checks.
    public func addRoutes(to router: Router<BasicRequestContext>) {
        router.add(middleware: DashboardGuard(dashboard: self))
        addPageRoutes(to: router)
        addActionRoutes(to: router)
        addStreamRoute(to: router)
        router.get("assets/dashboard.css") { _, _ in Self.asset(DashboardAssets.css, type: "text/css; charset=utf-8") }
        router.get("assets/dashboard.js") { _, _ in Self.asset(DashboardAssets.javascript, type: "text/javascript; charset=utf-8") }
        router.get("healthz") { _, _ -> Response in
            do {
                _ = try await queue.latestEventID()
                return .json(["status": "ok"])
            } catch {
                return .json(["status": "unavailable", "error": String(describing: error)], status: .serviceUnavailable)
            }
        }
    }

    static func asset(_ text: String, type: String) -> Response {
        Response(
            status: .ok, headers: [.contentType: type, .cacheControl: "no-cache"],
            body: .init(byteBuffer: ByteBuffer(string: text)))
    }

    static func randomToken() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined()
    }
}

/// Counts open live-update streams, so that a flood of them cannot exhaust the server.
final class StreamCounter: Sendable {
    private let limit: Int
    private let open = Mutex(0)

    init(limit: Int) { self.limit = limit }

    func enter() -> Bool {
        open.withLock { count in
            guard count < limit else { return false }
            count += 1
            return true
        }
    }

    func leave() { open.withLock { $0 -= 1 } }
}

/// The dashboard as a swift-service-lifecycle `Service`: what `jobq dashboard` runs.
///
/// ```swift
/// let server = try DashboardServer(queue: queue, address: ListenAddress("127.0.0.1:8080"), options: .init(storeName: "jobs.sqlite"))
/// try await ServiceGroup(configuration: .init(services: [server], logger: logger)).run()
/// ```
public struct DashboardServer: Service {
    let application: HTTPApplication

    /// - Throws: ``DashboardError`` when `address` is beyond loopback and no access token is set.
    public init(
        queue: JobQueue, address: ListenAddress, options: Dashboard.Options, logger: Logger = Logger(label: "jobq.dashboard"),
        onListening: @escaping @Sendable (ListenAddress) -> Void = { _ in }
    ) throws(DashboardError) {
        try Self.check(address: address, options: options)
        let router = Router()
        Dashboard(queue: queue, options: options).addRoutes(to: router)
        application = address.application(router, logger: logger, onListening: onListening)
    }

    public func run() async throws {
        try await application.run()
    }

    /// Refuses a dashboard beyond loopback without an access token, and a short token.
    public static func check(address: ListenAddress, options: Dashboard.Options) throws(DashboardError) {
        guard address.isLoopback || !(options.accessToken ?? "").isEmpty else {
            throw DashboardError(
                message: "the dashboard would listen on \(address), beyond this machine, without an access token: "
                    + "set one with --token or JOBQ_DASHBOARD_TOKEN (every request must then carry it), or listen on 127.0.0.1")
        }
        if let token = options.accessToken, token.count < 16 {
            throw DashboardError(message: "the access token is \(token.count) characters long; use at least 16 (e.g. `openssl rand -hex 24`)")
        }
    }
}

/// The dashboard cannot start as configured; the message says what to change.
public struct DashboardError: Error, Sendable, CustomStringConvertible {
    public let message: String
    public var description: String { message }
}
