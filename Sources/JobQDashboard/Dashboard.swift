import Foundation
import Hummingbird
import JobQCore
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
/// origin. Who may use it is the ``Options/access`` you choose: an access token every request
/// carries (a session cookie from `/login`, or `Authorization: Bearer`), or this machine only,
/// checked by the peer's address and the `Host` it names.
///
/// ```swift
/// let token = try String(contentsOfFile: "/run/secrets/jobq-dashboard", encoding: .utf8)
/// let dashboard = Dashboard(queue: queue, options: .init(storeName: "jobs.sqlite", access: .token(token)))
/// let router = Router(context: DashboardRequestContext.self)
/// dashboard.addRoutes(to: router)          // or run a DashboardServer
/// ```
public struct Dashboard: Sendable {
    public struct Options: Sendable {
        /// What the header says the store is (a path, or a redacted URL).
        public var storeName: String
        /// Who may use the dashboard; see ``Access``.
        public var access: Access
        /// Pages without actions; every POST refused.
        public var readOnly: Bool
        /// Jobs per page of the jobs list.
        public var pageSize: Int
        /// Live update streams open at once; more are refused with 503.
        public var maximumStreams: Int
        /// How long a browser stays signed in after `/login` (a token dashboard).
        public var sessionLifetime: Duration
        /// The HTTP API served beside the pages (``HTTPAPI``, under `/api/v1`), or nil for none.
        /// It takes the store's API tokens (`jobq token add`), never the dashboard's access.
        public var api: HTTPAPI.Options?

        public init(
            storeName: String, access: Access, readOnly: Bool = false, pageSize: Int = 50, maximumStreams: Int = 64,
            sessionLifetime: Duration = .seconds(12 * 3600), api: HTTPAPI.Options? = HTTPAPI.Options()
        ) {
            self.storeName = storeName
            self.access = access
            self.readOnly = readOnly
            self.pageSize = pageSize
            self.maximumStreams = maximumStreams
            self.sessionLifetime = sessionLifetime
            self.api = api
        }

        /// The token of a token dashboard, or nil.
        var accessToken: String? {
            guard case .token(let token) = access else { return nil }
            return token
        }
    }

    let queue: JobQueue
    let options: Options
    /// The token every form carries: random per process, never sent to another origin, so a
    /// page elsewhere cannot forge an action.
    let formToken: String
    let streams: StreamCounter
    let sessions: Sessions

    /// The shortest access token accepted.
    static let minimumTokenLength = 16

    /// The cookie that carries a signed-in browser's session id.
    static let sessionCookie = "jobq_session"

    public init(queue: JobQueue, options: Options) {
        self.queue = queue
        self.options = options
        formToken = Self.randomToken()
        streams = StreamCounter(limit: options.maximumStreams)
        sessions = Sessions(lifetime: options.sessionLifetime)
    }

    /// Adds the dashboard's pages, actions, live stream and assets to `router`, behind its
    /// access checks. A loopback-only dashboard needs a context that reports the peer's address
    /// (``DashboardRequestContext``, or any `RemoteAddressRequestContext`); with another, it
    /// refuses every request and says why.
    public func addRoutes<Context: RequestContext>(to router: Router<Context>) {
        router.add(middleware: DashboardGuard<Context>(dashboard: self))
        if let api = options.api { HTTPAPI(queue: queue, options: api).addRoutes(to: router) }
        addPageRoutes(to: router)
        addActionRoutes(to: router)
        addBulkRoutes(to: router)
        addStreamRoute(to: router)
        router.get("assets/dashboard.css") { _, _ in Self.asset(DashboardAssets.css, type: "text/css; charset=utf-8") }
        router.get("assets/dashboard.js") { _, _ in
            Self.asset(DashboardAssets.javascript, type: "text/javascript; charset=utf-8")
        }
        let queue = self.queue
        router.get("healthz") { _, context -> Response in await Response.health(of: queue, logger: context.logger) }
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

    /// A slot, or nil when every slot is taken.
    func enter() -> Slot? {
        let entered = open.withLock { count in
            guard count < limit else { return false }
            count += 1
            return true
        }
        return entered ? Slot(counter: self) : nil
    }

    /// How many slots are taken.
    var taken: Int { open.withLock { $0 } }

    fileprivate func leave() { open.withLock { $0 -= 1 } }

    /// One stream's place, given back once: by the stream when it ends, or when the last
    /// reference goes, whichever is first. The server drops a response whose head it could
    /// not write (a client that sent its request and reset) without ever running its body, so
    /// the body closure that holds the slot is released without a word: its deinit is the only
    /// path every response takes.
    final class Slot: Sendable {
        private let counter: StreamCounter
        private let given = Atomic<Bool>(false)

        fileprivate init(counter: StreamCounter) { self.counter = counter }

        func giveBack() {
            if !given.exchange(true, ordering: .acquiringAndReleasing) { counter.leave() }
        }

        deinit { giveBack() }
    }
}

/// The dashboard as a swift-service-lifecycle `Service`: what `jobq dashboard` runs.
///
/// ```swift
/// let server = try DashboardServer(
///     queue: queue, address: ListenAddress("127.0.0.1:8080"), options: .init(storeName: "jobs.sqlite", access: .loopbackOnly))
/// try await ServiceGroup(configuration: .init(services: [server], logger: logger)).run()
/// ```
///
/// Stop it with the group's graceful shutdown (a signal, or `triggerGracefulShutdown()`), which
/// closes the listening socket first: cancelling the task that runs it can meet a connection
/// still being accepted, which NIO answers by stopping the process.
public struct DashboardServer: Service {
    let application: HTTPApplication<DashboardRequestContext>

    /// - Throws: ``DashboardError`` when `address` is beyond loopback and no access token is set,
    ///   or the token is short.
    public init(
        queue: JobQueue, address: ListenAddress, options: Dashboard.Options,
        logger: Logger = Logger(label: "jobq.dashboard"),
        onListening: @escaping @Sendable (ListenAddress) -> Void = { _ in }
    ) throws(DashboardError) {
        try Self.check(address: address, options: options)
        let router = Router(context: DashboardRequestContext.self)
        Dashboard(queue: queue, options: options).addRoutes(to: router)
        application = address.application(router, logger: logger, onListening: onListening)
    }

    public func run() async throws {
        try await application.run()
    }

    /// Refuses a dashboard beyond loopback without an access token, and a short token.
    public static func check(address: ListenAddress, options: Dashboard.Options) throws(DashboardError) {
        guard address.isLoopback || options.accessToken != nil else {
            throw DashboardError(
                message: "the dashboard would listen on \(address), beyond this machine, without an access token: "
                    + "give one with --token-file or JOBQ_DASHBOARD_TOKEN (every request must then carry it), or listen on 127.0.0.1"
            )
        }
        if let token = options.accessToken, token.count < Dashboard.minimumTokenLength {
            throw DashboardError(
                message:
                    "the access token is \(token.count) characters long; use at least 16 (e.g. `openssl rand -hex 24`)")
        }
    }
}

/// The dashboard cannot start as configured; the message says what to change.
public struct DashboardError: Error, Sendable, CustomStringConvertible {
    public let message: String
    public var description: String { message }
}
