import Foundation
import HTTPTypes
import Hummingbird

/// The dashboard's access checks, in front of every route:
/// - without an access token, the `Host` must name this machine (a page elsewhere cannot reach
///   a loopback dashboard through a DNS name it controls);
/// - with one, every request must carry it (cookie from `/login`, or `Authorization: Bearer`);
/// - a POST must come from the dashboard's own origin, and (checked with the form) carry the
///   form token; a read-only dashboard refuses every POST but `/login`.
/// Every response gets headers that keep the pages from being framed or running other scripts.
struct DashboardGuard: RouterMiddleware {
    typealias Context = BasicRequestContext
    let dashboard: Dashboard

    static let cookieName = "jobq_dashboard"

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var response = try await check(request, context: context, next: next)
        response.headers[.contentSecurityPolicy] =
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
        response.headers[.xContentTypeOptions] = "nosniff"
        // Not no-referrer: with it, browsers send `Origin: null` on the dashboard's own form posts.
        response.headers[.referrerPolicy] = "same-origin"
        response.headers[.xFrameOptions] = "DENY"
        return response
    }

    private func check(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let path = request.uri.path
        let token = dashboard.options.accessToken
        if token == nil, !Self.isLoopbackHost(request.head.authority ?? "") {
            return Pages.error(
                .forbidden, "This dashboard answers only to this machine's names (localhost, 127.0.0.1, [::1]); "
                    + "to reach it by another name, start it with an access token (--token).", dashboard: dashboard)
        }
        if request.method == .post {
            if let problem = Self.crossSiteProblem(request) {
                return Pages.error(.forbidden, problem, dashboard: dashboard)
            }
            if dashboard.options.readOnly, path != "/login" {
                return Pages.error(.forbidden, "This dashboard is read-only (--read-only): actions are refused.", dashboard: dashboard)
            }
        }
        if let token, !path.hasPrefix("/assets/"), path != "/login", path != "/healthz", !Self.carries(token, request) {
            if request.method == .get, path != "/events/stream" {
                return Pages.login(dashboard: dashboard, status: .unauthorized, message: nil)
            }
            return Pages.error(.forbidden, "This request does not carry the dashboard's access token.", dashboard: dashboard)
        }
        return try await next(request, context)
    }

    static func isLoopbackHost(_ authority: String) -> Bool {
        var host = authority
        if host.hasPrefix("[") {
            host = String(host.dropFirst().prefix { $0 != "]" })
        } else if let colon = host.lastIndex(of: ":") {
            host = String(host[..<colon])
        }
        host = host.lowercased()
        return host == "localhost" || host == "::1" || host.hasPrefix("127.")
    }

    /// Why a POST looks cross-site, or nil. Browsers send `Origin` with every POST (and
    /// `Sec-Fetch-Site`); a request without either is not from a browser page.
    static func crossSiteProblem(_ request: Request) -> String? {
        let host = request.head.authority ?? ""
        if let site = request.headers[.secFetchSite], site != "same-origin", site != "none" {
            return "Refused: the request came from another site (Sec-Fetch-Site: \(site))."
        }
        if let origin = request.headers[.origin] {
            guard origin == "http://\(host)" || origin == "https://\(host)" else {
                return "Refused: the request came from another origin (\(origin)); actions are taken only from the dashboard's own pages."
            }
        }
        return nil
    }

    static func carries(_ token: String, _ request: Request) -> Bool {
        if let authorization = request.headers[.authorization], authorization.hasPrefix("Bearer ") {
            return constantTimeEqual(String(authorization.dropFirst(7)), token)
        }
        for pair in (request.headers[.cookie] ?? "").split(separator: ";") {
            let parts = pair.trimmingCharacters(in: .whitespaces).split(separator: "=", maxSplits: 1)
            if parts.count == 2, parts[0] == cookieName, constantTimeEqual(String(parts[1]), token) { return true }
        }
        return false
    }

    /// Equal strings, compared in time that does not depend on where they differ.
    static func constantTimeEqual(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8), y = Array(b.utf8)
        guard x.count == y.count else { return false }
        return zip(x, y).reduce(0) { $0 | ($1.0 ^ $1.1) } == 0
    }
}

extension HTTPField.Name {
    static let contentSecurityPolicy = Self("Content-Security-Policy")!
    static let xContentTypeOptions = Self("X-Content-Type-Options")!
    static let referrerPolicy = Self("Referrer-Policy")!
    static let xFrameOptions = Self("X-Frame-Options")!
    static let secFetchSite = Self("Sec-Fetch-Site")!
    static let origin = Self("Origin")!
}
