import Foundation
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A plain HTTP client for the tests of jobq's HTTP servers (URLSession, no redirects followed).
enum HTTP {
    struct Response {
        let status: Int
        let headers: [String: String]
        let body: String

        func header(_ name: String) -> String? {
            headers.first { $0.key.lowercased() == name.lowercased() }?.value
        }
    }

    private final class NoRedirects: NSObject, URLSessionTaskDelegate, @unchecked Sendable {
        func urlSession(
            _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
            newRequest request: URLRequest, completionHandler: @escaping (URLRequest?) -> Void
        ) {
            completionHandler(nil)
        }
    }

    /// No cookie jar: each request carries exactly the headers its test gives it.
    private static let session: URLSession = {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpCookieStorage = nil
        configuration.httpShouldSetCookies = false
        return URLSession(configuration: configuration, delegate: NoRedirects(), delegateQueue: nil)
    }()

    static func request(
        _ method: String, _ url: String, headers: [String: String] = [:], body: String? = nil
    ) async throws -> Response {
        var request = URLRequest(url: try #require(URL(string: url)), timeoutInterval: 30)
        request.httpMethod = method
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        request.httpBody = body.map { Data($0.utf8) }
        let (data, response) = try await session.data(for: request)
        let http = try #require(response as? HTTPURLResponse)
        var fields: [String: String] = [:]
        for (name, value) in http.allHeaderFields { fields["\(name)"] = "\(value)" }
        return Response(status: http.statusCode, headers: fields, body: String(decoding: data, as: UTF8.self))
    }

    static func get(_ url: String, headers: [String: String] = [:]) async throws -> Response {
        try await request("GET", url, headers: headers)
    }
}

/// Python modules from PyPI that some tests drive (prometheus_client, selenium); `.ci/run`
/// installs them. Without them those tests are skipped, and say so.
enum PythonModules {
    static func available(_ module: String) -> Bool {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", "import \(module)"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        do {
            try process.run()
            process.waitUntilExit()
            return process.terminationStatus == 0
        } catch {
            return false
        }
    }

    /// In CI (`CI` set) the tests that need these run whatever this says, and fail when what
    /// they need is missing, rather than being skipped.
    static let inCI = ProcessInfo.processInfo.environment["CI"] != nil

    static let prometheusClient = inCI || available("prometheus_client")
    static let prometheusClientMissing: Comment =
        "prometheus_client is not installed: `python3 -m pip install prometheus_client`"

    /// Runs a Python script file with arguments and returns its stdout; fails on a non-zero exit.
    static func run(script: String, arguments: [String]) async throws -> String {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("jobq-py-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let scriptPath = scratch.appendingPathComponent("script.py").path
        try script.write(toFile: scriptPath, atomically: true, encoding: .utf8)
        let out = scratch.appendingPathComponent("out").path
        let err = scratch.appendingPathComponent("err").path
        let child = try Child(
            executable: URL(fileURLWithPath: "/usr/bin/env"), arguments: ["python3", scriptPath] + arguments,
            environment: [:],
            stdoutPath: out, stderrPath: err)
        await child.wait()
        let stderr = (try? String(contentsOfFile: err, encoding: .utf8)) ?? ""
        try #require(child.terminationStatus == 0, "python3 failed: \(stderr)")
        return (try? String(contentsOfFile: out, encoding: .utf8)) ?? ""
    }
}

/// HTTP over a plain socket, for what URLSession will not do: a `Host` header of the test's
/// choosing, and reading a stream that never ends (server-sent events) until a condition holds.
enum RawHTTP {
    /// Sends `request` (CRLF line ends added) to `host` (an IPv4 address):`port` and reads until
    /// `done` holds for what arrived, the server closes, or `timeout` passes. Returns what arrived.
    static func exchange(
        port: Int, host: String = "127.0.0.1", _ request: String, timeout: Double = 10,
        until done: @escaping @Sendable (String) -> Bool = { _ in false }
    ) async throws -> String {
        try await onThread {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard fd >= 0 else { throw TimedOut(what: "a socket") }
            defer { close(fd) }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            address.sin_addr.s_addr = inet_addr(host)
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            guard connected == 0 else { throw TimedOut(what: "a connection to port \(port)") }
            var tv = timeval(tv_sec: 0, tv_usec: 200_000)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
            let bytes = Array(request.replacingOccurrences(of: "\n", with: "\r\n").utf8)
            _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
            var received: [UInt8] = []
            let deadline = Date().addingTimeInterval(timeout)
            var chunk = [UInt8](repeating: 0, count: 4096)
            while Date() < deadline {
                let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                if count == 0 { break }
                if count > 0 {
                    received += chunk[0..<count]
                    if done(String(decoding: received, as: UTF8.self)) { break }
                }
            }
            return String(decoding: received, as: UTF8.self)
        }.value
    }

    /// Sends `request` to 127.0.0.1:`port` and resets the connection at once (SO_LINGER 0):
    /// a client that asks and vanishes before the answer's head is written.
    static func sendAndReset(port: Int, _ request: String) async throws {
        try await onThread {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard fd >= 0 else { throw TimedOut(what: "a socket") }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            guard connected == 0 else {
                close(fd)
                throw TimedOut(what: "a connection to port \(port)")
            }
            let bytes = Array(request.replacingOccurrences(of: "\n", with: "\r\n").utf8)
            _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
            var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
            setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
            close(fd)
        }.value
    }
}
