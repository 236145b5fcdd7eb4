import Foundation
import Hummingbird
import NIOCore
import Synchronization

extension Dashboard {
    /// Who may use a dashboard. There is no default: whoever mounts the dashboard chooses.
    ///
    /// ```swift
    /// // Anyone who can reach the server, with the token (a cookie from /login, or a bearer header):
    /// Dashboard.Options(storeName: "jobs.sqlite", access: .token(try String(contentsOfFile: "/run/secrets/jobq")))
    /// // Only this machine: the peer must be a loopback address and the Host a loopback name.
    /// Dashboard.Options(storeName: "jobs.sqlite", access: .loopbackOnly)
    /// ```
    public enum Access: Sendable, Equatable {
        /// Every request must carry this token (at least 16 characters).
        case token(String)
        /// No token; a request is answered only when its peer address is loopback (127.0.0.0/8
        /// or ::1) and its `Host` is a loopback literal or `localhost`, so neither another
        /// machine nor a web page reaching the server through a DNS name of its own (DNS
        /// rebinding) gets an answer. Needs a request context that reports the peer address
        /// (`RemoteAddressRequestContext`, e.g. ``DashboardRequestContext``); with any other
        /// context every request is refused.
        case loopbackOnly
    }
}

/// A Hummingbird request context that reports the peer's address, which a dashboard with
/// ``Dashboard/Access/loopbackOnly`` needs to check.
///
/// ```swift
/// let router = Router(context: DashboardRequestContext.self)
/// dashboard.addRoutes(to: router)
/// ```
public struct DashboardRequestContext: RequestContext, RemoteAddressRequestContext {
    public var coreContext: CoreRequestContextStorage
    public let remoteAddress: SocketAddress?

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
    }
}

/// Signed-in browsers: the cookie carries a random session id, never the access token, and
/// each session expires. Sessions live in the server's memory, so a restart signs everyone out.
final class Sessions: Sendable {
    private let lifetime: Duration
    private let limit: Int
    private let expiries = Mutex<[String: ContinuousClock.Instant]>([:])

    init(lifetime: Duration, limit: Int = 10_000) {
        self.lifetime = lifetime
        self.limit = limit
    }

    /// A new session id, valid for the lifetime.
    func open() -> String {
        let id = Dashboard.randomToken()
        let now = ContinuousClock.now
        expiries.withLock { sessions in
            if sessions.count >= limit {
                sessions = sessions.filter { $0.value > now }
                // Still full of live sessions: the oldest one goes (a flood of sign-ins cannot
                // grow memory without bound).
                if sessions.count >= limit, let oldest = sessions.min(by: { $0.value < $1.value })?.key {
                    sessions.removeValue(forKey: oldest)
                }
            }
            sessions[id] = now + lifetime
        }
        return id
    }

    func isValid(_ id: String) -> Bool {
        let now = ContinuousClock.now
        return expiries.withLock { sessions in
            guard let expiry = sessions[id] else { return false }
            if expiry <= now {
                sessions.removeValue(forKey: id)
                return false
            }
            return true
        }
    }

    var lifetimeSeconds: Int { Int(lifetime.components.seconds) }
}
