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

    private static let session = URLSession(configuration: .ephemeral, delegate: NoRedirects(), delegateQueue: nil)

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

    static let prometheusClient = available("prometheus_client")
    static let prometheusClientMissing: Comment = "prometheus_client is not installed: `python3 -m pip install prometheus_client`"

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
            executable: URL(fileURLWithPath: "/usr/bin/env"), arguments: ["python3", scriptPath] + arguments, environment: [:],
            stdoutPath: out, stderrPath: err)
        await child.wait()
        let stderr = (try? String(contentsOfFile: err, encoding: .utf8)) ?? ""
        try #require(child.terminationStatus == 0, "python3 failed: \(stderr)")
        return (try? String(contentsOfFile: out, encoding: .utf8)) ?? ""
    }
}
