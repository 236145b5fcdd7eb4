import Foundation
import HTTPTypes
import Hummingbird
import JobQWebText

/// The dashboard's access checks, in front of every route:
/// - ``Dashboard/Access/loopbackOnly``: the peer must be a loopback address and the `Host` a
///   loopback literal or `localhost` (a page elsewhere cannot reach the dashboard through a
///   DNS name it controls, and another machine cannot reach it at all);
/// - ``Dashboard/Access/token(_:)``: every request must carry it (a session cookie from
///   `/login`, or `Authorization: Bearer`);
/// - a POST must come from the dashboard's own origin: a browser's POST carries `Origin` or
///   `Sec-Fetch-Site`, and one without either is refused unless it carries the token as a bearer
///   header (a script); the form token is checked with the form. A read-only dashboard refuses
///   every POST but `/login`.
/// The HTTP API (`/api/v1/`) is let through to its own token checks.
/// Every response gets headers that keep the pages from being framed or running other scripts.
struct DashboardGuard<Context: RequestContext>: RouterMiddleware {
    let dashboard: Dashboard

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        var response = try await check(request, context: context, next: next)
        response.headers[.contentSecurityPolicy] =
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
        response.headers[.xContentTypeOptions] = "nosniff"
        // Not no-referrer: with it, browsers send `Origin: null` on the dashboard's own form posts.
        response.headers[.referrerPolicy] = "same-origin"
        response.headers[.xFrameOptions] = "DENY"
        return response
    }

    private func check(_ request: Request, context: Context, next: (Request, Context) async throws -> Response)
        async throws -> Response
    {
        let path = request.uri.path
        // The API checks its own tokens (``HTTPAPI``): the dashboard's access is not theirs.
        if dashboard.options.api != nil, path.hasPrefix(HTTPAPI.prefix + "/") {
            return try await next(request, context)
        }
        let token = dashboard.options.accessToken
        if let token, token.count < Dashboard.minimumTokenLength {
            // A dashboard mounted with a short (or empty) token would accept a guessable one.
            return Pages.error(
                .internalServerError,
                "This dashboard's access token is shorter than \(Dashboard.minimumTokenLength) characters, "
                    + "so it refuses every request: give it a longer one (e.g. `openssl rand -hex 24`).",
                dashboard: dashboard)
        }
        if token == nil, let problem = Self.loopbackProblem(request, context: context) {
            return Pages.error(.forbidden, problem, dashboard: dashboard)
        }
        let bearer = token.map { Self.carriesBearer($0, request) } ?? false
        if request.method == .post {
            if let problem = Self.crossSiteProblem(request, bearer: bearer) {
                return Pages.error(.forbidden, problem, dashboard: dashboard)
            }
            if dashboard.options.readOnly, path != "/login" {
                return Pages.error(
                    .forbidden, "This dashboard is read-only (--read-only): actions are refused.", dashboard: dashboard)
            }
        }
        if token != nil, !path.hasPrefix("/assets/"), path != "/login", path != "/healthz", !bearer,
            !carriesSession(request)
        {
            if request.method == .get, path != "/events/stream" {
                return Pages.login(dashboard: dashboard, status: .unauthorized, message: nil)
            }
            return Pages.error(
                .forbidden, "This request does not carry the dashboard's access token.", dashboard: dashboard)
        }
        return try await next(request, context)
    }

    /// Why a loopback-only dashboard refuses this request, or nil.
    static func loopbackProblem(_ request: Request, context: Context) -> String? {
        guard let peer = (context as? any RemoteAddressRequestContext)?.remoteAddress else {
            return "This dashboard has no access token and cannot see who is asking: mount it on a router whose "
                + "request context reports the peer address (DashboardRequestContext), or give it an access token."
        }
        guard let address = peer.ipAddress, Loopback.isAddress(address) else {
            return
                "This dashboard answers only to this machine; to reach it from elsewhere, start it with an access token "
                + "(--token-file or JOBQ_DASHBOARD_TOKEN)."
        }
        guard let host = Loopback.host(ofAuthority: request.head.authority ?? ""), Loopback.isName(host) else {
            return "This dashboard answers only to this machine's names (localhost, 127.0.0.1, [::1]); "
                + "to reach it by another name, start it with an access token (--token-file or JOBQ_DASHBOARD_TOKEN)."
        }
        return nil
    }

    /// Why a POST looks cross-site, or nil. Browsers send `Origin` (and `Sec-Fetch-Site`) with
    /// every POST; a request with neither is a script's, allowed only with the bearer token.
    static func crossSiteProblem(_ request: Request, bearer: Bool) -> String? {
        let host = request.head.authority ?? ""
        let site = request.headers[.secFetchSite]
        let origin = request.headers[.origin]
        if let site, site != "same-origin", site != "none" {
            return "Refused: the request came from another site (Sec-Fetch-Site: \(site))."
        }
        if let origin {
            guard origin == "http://\(host)" || origin == "https://\(host)" else {
                return
                    "Refused: the request came from another origin (\(origin)); actions are taken only from the dashboard's own pages."
            }
        }
        if site == nil, origin == nil, !bearer {
            return "Refused: the request says neither where it came from (Origin) nor how (Sec-Fetch-Site); "
                + "scripts send the access token as `Authorization: Bearer TOKEN`."
        }
        return nil
    }

    static func carriesBearer(_ token: String, _ request: Request) -> Bool {
        guard let authorization = request.headers[.authorization], authorization.hasPrefix("Bearer ") else {
            return false
        }
        return constantTimeEqual(String(authorization.dropFirst(7)), token)
    }

    private func carriesSession(_ request: Request) -> Bool {
        guard let id = Self.cookie(Dashboard.sessionCookie, in: request) else { return false }
        return dashboard.sessions.isValid(id)
    }

    static func cookie(_ name: String, in request: Request) -> String? {
        for pair in (request.headers[.cookie] ?? "").split(separator: ";") {
            let parts = pair.trimmingCharacters(in: .whitespaces).split(separator: "=", maxSplits: 1)
            if parts.count == 2, parts[0] == name { return String(parts[1]) }
        }
        return nil
    }
}

/// Equal strings, compared in time that does not depend on where they differ.
func constantTimeEqual(_ a: String, _ b: String) -> Bool {
    let x = Array(a.utf8)
    let y = Array(b.utf8)
    guard x.count == y.count else { return false }
    return zip(x, y).reduce(0) { $0 | ($1.0 ^ $1.1) } == 0
}

extension HTTPField.Name {
    static let contentSecurityPolicy = Self("Content-Security-Policy")!
    static let xContentTypeOptions = Self("X-Content-Type-Options")!
    static let referrerPolicy = Self("Referrer-Policy")!
    static let xFrameOptions = Self("X-Frame-Options")!
    static let secFetchSite = Self("Sec-Fetch-Site")!
    static let origin = Self("Origin")!
}
