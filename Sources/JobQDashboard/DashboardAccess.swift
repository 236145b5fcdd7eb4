import Foundation
import Hummingbird
import NIOCore
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

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

/// Names and addresses that certainly mean this machine.
enum Loopback {
    /// `localhost`, `::1` or an IPv4 literal in 127.0.0.0/8 (dotted decimal, four parts). A DNS
    /// name that merely starts with `127.` can resolve anywhere, so it is not one.
    static func isName(_ host: String) -> Bool {
        let host = host.lowercased()
        return host == "localhost" || isAddress(host)
    }

    /// An IP literal in 127.0.0.0/8, `::1`, or `::ffff:127.x.y.z`.
    static func isAddress(_ text: String) -> Bool {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            return UInt32(bigEndian: v4.s_addr) >> 24 == 127
        }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, text, &v6) == 1 else { return false }
        let bytes = withUnsafeBytes(of: &v6) { Array($0) }
        if bytes[0..<15].allSatisfy({ $0 == 0 }) && bytes[15] == 1 { return true }
        // An IPv4 loopback peer seen through a dual-stack socket.
        return bytes[0..<10].allSatisfy { $0 == 0 } && bytes[10] == 0xff && bytes[11] == 0xff && bytes[12] == 127
    }

    /// The host part of a `Host` header (`name:port`, `[v6]:port`, or a bare name).
    static func host(ofAuthority authority: String) -> String {
        if authority.hasPrefix("[") { return String(authority.dropFirst().prefix { $0 != "]" }) }
        if let colon = authority.lastIndex(of: ":") { return String(authority[..<colon]) }
        return authority
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
