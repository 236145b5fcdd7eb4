import Foundation
import GRDB
import Hummingbird
import JobQWebText
import Logging
import Synchronization
import Testing

@testable import JobQCore
@testable import JobQDashboard
@testable import JobQSQL
@testable import JobQSQLite

/// The dashboard tried as an attacker would: forged `Host` and `Origin` headers (DNS
/// rebinding), requests from beyond loopback, stolen or stale sign-in cookies, hostile payloads.
@Suite("Web dashboard under attack")
struct DashboardSecurityTests {
    /// A raw request with a `Host` of the test's choosing.
    static func raw(
        _ port: Int, _ path: String, method: String = "GET", host: String, headers: [String] = [], body: String = ""
    ) async throws -> String {
        var lines = ["\(method) \(path) HTTP/1.1", "Host: \(host)", "Connection: close"] + headers
        if !body.isEmpty {
            lines += ["Content-Type: application/x-www-form-urlencoded", "Content-Length: \(body.utf8.count)"]
        }
        return try await RawHTTP.exchange(port: port, lines.joined(separator: "\n") + "\n\n" + body)
    }

    @Test func aRebindingHostIsRefusedForPagesAndActions() async throws {
        let queue = try JobQueue.inMemory()
        let job = try await queue.enqueue(try JobRequest(executor: "sum", payloadJSON: #"{"a":1,"b":2}"#))
        let dashboard = try await RunningDashboard(
            queue: queue, options: .init(storeName: "memory", access: .loopbackOnly))
        let formToken = try await dashboard.formToken()
        for host in [
            "127.attacker.example:\(dashboard.port)", "127.0.0.1.nip.io:\(dashboard.port)", "127.1:\(dashboard.port)",
            "evil.example", "localhost:1@evil.com", "[::1]evil.com", "localhost:80:81", "localhost:http",
            "localhost.:\(dashboard.port)"
        ] {
            let page = try await Self.raw(dashboard.port, "/jobs/\(job.id)", host: host)
            #expect(page.hasPrefix("HTTP/1.1 403"), "GET with Host \(host): \(page.prefix(120))")
            #expect(!page.contains(formToken), "Host \(host) never sees the form token")
            let origin = "http://\(host)"
            let action = try await Self.raw(
                dashboard.port, "/jobs/\(job.id)/cancel", method: "POST", host: host, headers: ["Origin: \(origin)"],
                body: "csrf=\(formToken)")
            #expect(action.hasPrefix("HTTP/1.1 403"), "POST with Host \(host): \(action.prefix(120))")
        }
        #expect(try await queue.job(job.id)?.state == .ready, "no forged request changed the job")
        for host in [
            "127.0.0.1:\(dashboard.port)", "localhost:\(dashboard.port)", "127.9.8.7", "[::1]:\(dashboard.port)"
        ] {
            #expect(
                try await Self.raw(dashboard.port, "/", host: host).hasPrefix("HTTP/1.1 200"),
                "Host \(host) is this machine")
        }
    }

    /// A form over 64 KiB is the client's error: 413, the job untouched, nothing logged as a
    /// failure of the store.
    @Test func anOversizedFormIsRefusedWith413() async throws {
        let queue = try JobQueue.inMemory()
        let job = try await queue.enqueue(try JobRequest(executor: "sum", payloadJSON: #"{"a":1,"b":2}"#))
        let dashboard = try await RunningDashboard(
            queue: queue, options: .init(storeName: "memory", access: .loopbackOnly))
        let formToken = try await dashboard.formToken()
        let host = "127.0.0.1:\(dashboard.port)"
        let answer = try await Self.raw(
            dashboard.port, "/jobs/\(job.id)/cancel", method: "POST", host: host,
            headers: ["Origin: http://\(host)"],
            body: "csrf=\(formToken)&pad=" + String(repeating: "x", count: 100_000))
        #expect(answer.hasPrefix("HTTP/1.1 413"), "\(answer.prefix(200))")
        #expect(try await queue.job(job.id)?.state == .ready)
    }

    /// A `Host` header is read strictly: a name or literal, then at most `:port`.
    @Test func theHostHeaderIsParsedStrictly() {
        #expect(Loopback.host(ofAuthority: "localhost:8080") == "localhost")
        #expect(Loopback.host(ofAuthority: "[::1]:8080") == "::1")
        #expect(Loopback.host(ofAuthority: "127.0.0.1") == "127.0.0.1")
        for forged in ["localhost:1@evil.com", "[::1]evil.com", "localhost:80:81", "[::1", "", ":80", "a b", "x:"] {
            #expect(Loopback.host(ofAuthority: forged) == nil, "\(forged)")
        }
    }

    @Test func onlyLoopbackLiteralsCountAsLoopback() throws {
        for name in ["127.0.0.1", "127.255.0.9", "localhost", "LOCALHOST", "::1", "0:0:0:0:0:0:0:1"] {
            #expect(try ListenAddress(name.contains(":") ? "[\(name)]:80" : "\(name):80").isLoopback, "\(name)")
        }
        for name in [
            "127.corp.example", "127.0.0.1.nip.io", "127.1", "0.0.0.0", "10.0.0.1", "localhost.example", "::",
            "::ffff:10.0.0.1"
        ] {
            #expect(try !ListenAddress(name.contains(":") ? "[\(name)]:80" : "\(name):80").isLoopback, "\(name)")
        }
        #expect(Loopback.isAddress("::ffff:127.0.0.1"), "an IPv4 loopback peer on a dual-stack socket")
        let queue = try JobQueue.inMemory()
        #expect(throws: DashboardError.self, "a name that merely starts with 127. needs a token") {
            try DashboardServer(
                queue: queue, address: ListenAddress("127.corp.example:0"),
                options: .init(storeName: "m", access: .loopbackOnly))
        }
    }

    /// An app of the user's own, listening on every interface, with the dashboard mounted.
    final class EmbeddedServer<Context: RequestContext>: Sendable
    where Context: InitializableFromSource<ApplicationRequestContextSource> {
        let port: Int
        let task: Task<Void, any Error>

        init(queue: JobQueue, access: Dashboard.Access, context: Context.Type) async throws {
            let router = Router(context: Context.self)
            Dashboard(queue: queue, options: .init(storeName: "memory", access: access)).addRoutes(to: router)
            let bound = Mutex<Int?>(nil)
            let application = ListenAddress(host: "0.0.0.0", port: 0).application(router, logger: Logger(label: "test"))
            { address in
                bound.withLock { $0 = address.port }
            }
            task = Task { try await application.run() }
            try await eventually(.seconds(30), "the app to listen") { bound.withLock { $0 } != nil }
            port = bound.withLock { $0 }!
        }

        deinit { task.cancel() }
    }

    @Test func anEmbeddedLoopbackDashboardChecksThePeerNotJustTheHost() async throws {
        let queue = try JobQueue.inMemory()
        // A context that cannot tell who is asking: every request refused, with the reason.
        let blind = try await EmbeddedServer(queue: queue, access: .loopbackOnly, context: BasicRequestContext.self)
        let refused = try await Self.raw(blind.port, "/", host: "localhost")
        #expect(
            refused.hasPrefix("HTTP/1.1 403") && refused.contains("DashboardRequestContext"), "\(refused.prefix(400))")

        let seeing = try await EmbeddedServer(
            queue: queue, access: .loopbackOnly, context: DashboardRequestContext.self)
        #expect(try await Self.raw(seeing.port, "/", host: "localhost").hasPrefix("HTTP/1.1 200"), "a loopback peer")
        // A peer on another interface of this machine is not loopback, whatever Host it sends.
        let outside = try #require(
            Self.nonLoopbackIPv4(), "this machine needs a non-loopback IPv4 address for this test")
        let answer = try await RawHTTP.exchange(
            port: seeing.port, host: outside, "GET / HTTP/1.1\nHost: localhost\nConnection: close\n\n")
        #expect(
            answer.hasPrefix("HTTP/1.1 403") && answer.contains("answers only to this machine"), "\(answer.prefix(300))"
        )
    }

    @Test func anEmbeddedTokenDashboardNeverTrustsTheHost() async throws {
        let queue = try JobQueue.inMemory()
        let job = try await queue.enqueue(try JobRequest(executor: "sum", payloadJSON: #"{"a":1,"b":2}"#))
        let secret = "embedded-secret-0123456789"
        let server = try await EmbeddedServer(queue: queue, access: .token(secret), context: BasicRequestContext.self)
        let page = try await Self.raw(server.port, "/jobs/\(job.id)", host: "localhost")
        #expect(
            page.hasPrefix("HTTP/1.1 401") && !page.contains("name=\"csrf\""),
            "Host: localhost gets the sign-in page, not the form token")
        // A script with the bearer token may POST without Origin; a browser session may not.
        let form = try await Self.raw(
            server.port, "/jobs/\(job.id)", host: "x", headers: ["Authorization: Bearer \(secret)"])
        let formToken = try #require(
            form.range(of: #"name="csrf" value=""#).map { String(form[$0.upperBound...].prefix { $0 != "\"" }) })
        let login = try await Self.raw(
            server.port, "/login", method: "POST", host: "x", headers: ["Origin: http://x"], body: "token=\(secret)")
        let cookie = try #require(login.split(separator: "\r\n").first { $0.lowercased().hasPrefix("set-cookie:") })
        let session = String(cookie.dropFirst("set-cookie: ".count).prefix { $0 != ";" })
        let bare = try await Self.raw(
            server.port, "/jobs/\(job.id)/cancel", method: "POST", host: "x", headers: ["Cookie: \(session)"],
            body: "csrf=\(formToken)")
        #expect(
            bare.hasPrefix("HTTP/1.1 403") && bare.contains("Origin"),
            "a cookie POST without Origin or Sec-Fetch-Site: \(bare.prefix(200))")
        #expect(try await queue.job(job.id)?.state == .ready)
        let script = try await Self.raw(
            server.port, "/jobs/\(job.id)/cancel", method: "POST", host: "x",
            headers: ["Authorization: Bearer \(secret)"], body: "csrf=\(formToken)")
        #expect(script.hasPrefix("HTTP/1.1 303"), "\(script.prefix(200))")
        #expect(try await queue.job(job.id)?.state == .cancelled)

        let short = try await EmbeddedServer(queue: queue, access: .token(""), context: BasicRequestContext.self)
        let empty = try await Self.raw(short.port, "/", host: "x", headers: ["Authorization: Bearer "])
        #expect(
            empty.hasPrefix("HTTP/1.1 500") && empty.contains("shorter than 16"),
            "an empty token lets nobody in: \(empty.prefix(200))")
    }

    @Test func theSignInCookieIsASessionThatExpires() async throws {
        let queue = try JobQueue.inMemory()
        let secret = "cookie-secret-0123456789"
        let dashboard = try await RunningDashboard(
            queue: queue, options: .init(storeName: "memory", access: .token(secret), sessionLifetime: .seconds(30)))
        let signedIn = ContinuousClock.now
        let login = try await dashboard.post("/login", fields: ["token": secret], token: nil)
        // The session began when the server answered, at the latest.
        let answered = ContinuousClock.now
        let cookie = try #require(login.header("Set-Cookie"))
        #expect(!cookie.contains(secret), "the cookie never holds the token: \(cookie)")
        #expect(cookie.contains("Max-Age=30") && cookie.contains("HttpOnly"), "\(cookie)")
        let session = String(cookie.prefix { $0 != ";" })
        #expect(try await dashboard.get("/", headers: ["Cookie": session]).status == 200)
        #expect(
            try await dashboard.get("/", headers: ["Cookie": "jobq_session=\(secret)"]).status == 401,
            "the token is not a session")
        #expect(
            try await dashboard.get("/", headers: ["Cookie": "jobq_session=0123"]).status == 401, "a made-up session")
        // Thirty seconds: the requests above fit in them on a loaded machine too (a CI start
        // once took 17 s for them).
        #expect(
            ContinuousClock.now - signedIn < .seconds(30), "the checks of a live session took too long to mean anything"
        )
        try await Task.sleep(until: answered + .milliseconds(30_300))
        #expect(try await dashboard.get("/", headers: ["Cookie": session]).status == 401, "an expired session")
    }

    /// Clients that ask for the live stream and reset never keep a slot for good: after
    /// hundreds of them a stream opens again.
    @Test func resettingStreamClientsLeaveNoSlotTaken() async throws {
        let queue = try JobQueue.inMemory()
        let dashboard = try await RunningDashboard(
            queue: queue, options: .init(storeName: "memory", access: .loopbackOnly, maximumStreams: 4))
        let request = "GET /events/stream HTTP/1.1\nHost: 127.0.0.1:\(dashboard.port)\n\n"
        for _ in 0..<200 { try await RawHTTP.sendAndReset(port: dashboard.port, request) }
        // Streams whose body ran hold their slot until the next ping (15 s) finds the client
        // gone; those whose head could not be written give it back at once.
        try await eventually(.seconds(25), "a live stream to open after the resets") {
            let answer = try await RawHTTP.exchange(port: dashboard.port, request, timeout: 2) {
                $0.contains("retry: 2000") || $0.contains("HTTP/1.1 503")
            }
            return answer.hasPrefix("HTTP/1.1 200")
        }
    }

    /// A stream's slot goes back on every path: given back by the stream, or dropped unused
    /// (a response whose body the server never ran), once either way.
    @Test func aStreamSlotGoesBackOnEveryPathOnce() {
        let counter = StreamCounter(limit: 2)
        var first = counter.enter()
        let second = counter.enter()
        #expect(first != nil && second != nil && counter.enter() == nil && counter.taken == 2)
        second?.giveBack()
        second?.giveBack()
        #expect(counter.taken == 1, "given back once")
        first = nil  // a response dropped without its body run
        #expect(first == nil && counter.taken == 0)
        withExtendedLifetime(second) {}
    }

    @Test func aFailedStreamStartGivesItsSlotBackAndHealthSaysNoMore() async throws {
        let store = try TemporaryStore()
        let queue = try store.open()
        let dashboard = try await RunningDashboard(
            queue: queue, options: .init(storeName: "s", access: .loopbackOnly, maximumStreams: 1))
        // Another connection breaks the store under the dashboard: every read of events fails.
        let other = try DatabaseQueue(path: store.path)
        try await other.write { try $0.execute(sql: "ALTER TABLE jobq_events RENAME TO events_away") }
        for round in 1...3 {
            let failed = try await dashboard.get("/events/stream")
            #expect(
                failed.status == 500, "round \(round): the store's failure, not 'too many streams' (\(failed.status))")
        }
        let health = try await dashboard.get("/healthz")
        #expect(
            health.status == 503 && health.body == "{\"status\":\"unavailable\"}\n", "no error text: \(health.body)")
        try await other.write { try $0.execute(sql: "ALTER TABLE events_away RENAME TO jobq_events") }
        let cursor = try await queue.latestEventID()
        let stream = try await RawHTTP.exchange(
            port: dashboard.port, "GET /events/stream HTTP/1.1\nHost: 127.0.0.1\nLast-Event-ID: \(cursor)\n\n",
            timeout: 10
        ) { $0.contains("retry:") }
        #expect(
            stream.hasPrefix("HTTP/1.1 200") && stream.contains("retry: 2000"),
            "the one slot is free again: \(stream.prefix(200))")
    }

    @Test func pagesCarryNoInlineStyleAndTreesIndentByClass() async throws {
        let queue = try JobQueue.inMemory()
        let tree = TreeNode(executor: "echo", name: "root") {
            TreeNode(executor: "echo", name: "leaf") { TreeNode(executor: "echo", name: "deep") }
        }
        let workflow = try await queue.submit(tree, input: ["x": JSONValue.array([1])] as [String: JSONValue])
        let dashboard = try await RunningDashboard(queue: queue, options: .init(storeName: "m", access: .loopbackOnly))
        let page = try await dashboard.get("/workflows/\(workflow)")
        #expect(page.status == 200)
        #expect(!page.body.contains("style="), "the content security policy refuses inline styles")
        #expect(page.body.contains("tree-node depth-2"), "\(page.body)")
        let css = try await dashboard.get("/assets/dashboard.css").body
        #expect(css.contains("li.tree-node.depth-2 { padding-left: calc(.7rem + 2 * 1.5rem); }"))
    }

    @Test func aHugeOrDeepPayloadRendersQuicklyAndBounded() async throws {
        let queue = try JobQueue.inMemory()
        let records = Array(repeating: #"{"id":1,"tags":[]}"#, count: 1024 * 1024 / 19)
        let wide = "[" + records.joined(separator: ",") + "]"
        let deep =
            String(repeating: "[", count: 511) + String(repeating: "x", count: 0) + "1"
            + String(repeating: "]", count: 511)
        let deepPadded = "{\"pad\":\"" + String(repeating: "y", count: 1024 * 1024 - 1100) + "\",\"deep\":" + deep + "}"
        let dashboard = try await RunningDashboard(queue: queue, options: .init(storeName: "m", access: .loopbackOnly))
        for (what, payload) in [
            ("1 MiB of small records with empty arrays", wide), ("1 MiB nested 511 deep", deepPadded)
        ] {
            let job = try await queue.enqueue(try JobRequest(executor: "echo", payloadJSON: payload))
            let started = ContinuousClock.now
            let page = try await dashboard.get("/jobs/\(job.id)")
            let took = ContinuousClock.now - started
            #expect(page.status == 200, "\(what)")
            // Alone, in a debug build, both pages take about 0.3 s together; the rendering this
            // replaced took hours on the first payload (quadratic) and ~2 GB on the second. The
            // bound leaves room for a machine loaded by the rest of the suite (4 s seen there).
            #expect(took < .seconds(30), "\(what): the page took \(took)")
            #expect(page.body.utf8.count < 400 * 1024, "\(what): the page is \(page.body.utf8.count) bytes")
            #expect(page.body.contains("/jobs/\(job.id)/raw/payload"), "\(what): a link to the whole value")
            let raw = try await dashboard.get("/jobs/\(job.id)/raw/payload")
            #expect(
                raw.status == 200 && raw.body == payload
                    && raw.header("Content-Type") == "application/json; charset=utf-8")
        }
        #expect(try await dashboard.get("/jobs/1/raw/secrets").status == 400)
        let (deepText, complete) = HTML.prettyJSON(deep)
        #expect(
            complete && deepText.split(separator: "\n").allSatisfy { $0.count <= 2 * HTML.jsonIndentLimit + 1 },
            "indentation stops at the limit")
        #expect(
            HTML.prettyJSON(#"{"a": [ ], "b":{},"c":[1,{"d":"x,y"}]}"#).text
                == "{\n  \"a\": [],\n  \"b\": {},\n  \"c\": [\n    1,\n    {\n      \"d\": \"x,y\"\n    }\n  ]\n}")
    }

    /// The readable JSON of a job page stops at its limit whatever its input's last bytes add
    /// (closing brackets add a line and its indentation each): the fuzzer found a short, deep
    /// input whose rendering ended past the limit and was called complete.
    @Test func readableJSONNeverEndsPastItsLimit() {
        for depth in 1...40 {
            let text = String(repeating: "[1,", count: depth) + "1" + String(repeating: "]", count: depth)
            for limit in stride(from: 8, through: 600, by: 1) {
                let (pretty, complete) = HTML.prettyJSON(text, limit: limit)
                #expect(pretty.utf8.count <= limit, "depth \(depth), limit \(limit): \(pretty.utf8.count) bytes")
                if complete { #expect(withoutBlanks(pretty) == withoutBlanks(text)) }
            }
        }
    }

    private func withoutBlanks(_ text: String) -> String { text.filter { !$0.isWhitespace } }

    /// An IPv4 address of this machine that is not loopback, if it has one.
    static func nonLoopbackIPv4() -> String? {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0, let first = list else { return nil }
        defer { freeifaddrs(list) }
        for entry in sequence(first: first, next: { $0.pointee.ifa_next }) {
            guard let address = entry.pointee.ifa_addr, address.pointee.sa_family == sa_family_t(AF_INET) else {
                continue
            }
            var text = [CChar](repeating: 0, count: Int(INET_ADDRSTRLEN))
            address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { pointer in
                var inAddress = pointer.pointee.sin_addr
                _ = inet_ntop(AF_INET, &inAddress, &text, socklen_t(INET_ADDRSTRLEN))
            }
            let string = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            if !string.hasPrefix("127.") { return string }
        }
        return nil
    }
}

/// `jobq dashboard`'s token sources and its read-only open.
@Suite("jobq dashboard access on the command line")
struct DashboardAccessCLITests {
    @Test func tokensComeFromAFileAndBadOnesAreRefused() async throws {
        let store = try TemporaryStore()
        _ = try store.open()
        let missing = try await CLI.run(
            ["dashboard", "--token-file", store.directory.appendingPathComponent("nope").path], db: store.path)
        #expect(
            missing.status == 2 && missing.stderr.contains("--token-file") && missing.stderr.contains("cannot read"),
            "\(missing.stderr)")
        let emptyFile = store.directory.appendingPathComponent("empty").path
        try "\n".write(toFile: emptyFile, atomically: true, encoding: .utf8)
        let empty = try await CLI.run(["dashboard", "--token-file", emptyFile], db: store.path)
        #expect(empty.status == 2 && empty.stderr.contains("is empty"), "\(empty.stderr)")
        let shortFile = store.directory.appendingPathComponent("short").path
        try "abc\n".write(toFile: shortFile, atomically: true, encoding: .utf8)
        let short = try await CLI.run(["dashboard", "--listen", "0.0.0.0:0", "--token-file", shortFile], db: store.path)
        #expect(short.status == 2 && short.stderr.contains("at least 16"), "\(short.stderr)")
        let rebindable = try await CLI.run(
            ["dashboard", "--listen", "127.corp.example:0"], db: store.path, environment: ["JOBQ_DASHBOARD_TOKEN": ""])
        #expect(rebindable.status == 2 && rebindable.stderr.contains("without an access token"), "\(rebindable.stderr)")
    }

    @Test func readOnlyChangesNothingAndAsksForMigrationFirst() async throws {
        let store = try TemporaryStore()
        let fixture = FixtureTests.directory.appendingPathComponent("store-v1.sqlite")
        try FileManager.default.copyItem(at: fixture, to: URL(fileURLWithPath: store.path))
        let before = try Data(contentsOf: URL(fileURLWithPath: store.path))
        let listing = try FileManager.default.contentsOfDirectory(atPath: store.directory.path)
        let result = try await CLI.run(["dashboard", "--read-only", "--listen", "127.0.0.1:0"], db: store.path)
        #expect(result.status != 0 && result.stderr.contains("jobq migrate up"), "\(result.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: store.path)) == before, "the store file is unchanged")
        let after = try FileManager.default.contentsOfDirectory(atPath: store.directory.path).filter {
            !$0.hasSuffix("-wal") && !$0.hasSuffix("-shm")
        }
        #expect(after.sorted() == listing.sorted(), "no backup was written: \(after)")
    }

    /// On a current store in rollback-journal mode whose file and folder only allow reading,
    /// `--read-only` serves the pages and changes no byte: no switch to WAL, no `-wal` or
    /// `-shm` files, no checkpoint.
    @Test func readOnlyWritesNothingToACurrentStore() async throws {
        let store = try TemporaryStore()
        do {
            let queue = try store.open()
            _ = try await queue.enqueue(try JobRequest(executor: "echo", payloadJSON: #"{"shown":1}"#))
        }
        let rollback = try DatabaseQueue(path: store.path)
        _ = try await rollback.writeWithoutTransaction { try String.fetchOne($0, sql: "PRAGMA journal_mode = DELETE") }
        try rollback.close()
        for suffix in ["-wal", "-shm"] { try? FileManager.default.removeItem(atPath: store.path + suffix) }
        let before = try Data(contentsOf: URL(fileURLWithPath: store.path))
        let listing = try FileManager.default.contentsOfDirectory(atPath: store.directory.path).sorted()
        try FileManager.default.setAttributes([.posixPermissions: 0o444], ofItemAtPath: store.path)
        defer { try? FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: store.path) }

        let log = store.directory.appendingPathComponent("dashboard.log").path
        let dashboard = try CLI.startDetached(
            ["dashboard", "--read-only", "--listen", "127.0.0.1:0"], db: store.path, logPath: log)
        let base = try await MetricsEndpointTests.listeningAddress(in: log)
        let page = try await HTTP.get(base + "/jobs/1")
        #expect(page.status == 200 && page.body.contains("shown"), "\(page.status)")
        kill(dashboard.processIdentifier, SIGTERM)
        await dashboard.wait()
        #expect(try Data(contentsOf: URL(fileURLWithPath: store.path)) == before, "the store file is unchanged")
        let after = try FileManager.default.contentsOfDirectory(atPath: store.directory.path).filter {
            !$0.hasPrefix("dashboard.log")
        }
        #expect(after.sorted() == listing, "no -wal, -shm or backup: \(after)")
    }
}
