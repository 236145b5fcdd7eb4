import Foundation
import Testing

/// A PostgreSQL cluster of one test's own (`scripts/postgres.sh` with a directory and port of
/// its own), for tests that restart or stop the server under jobq: the shared test server must
/// stay up for the tests running beside them.
struct PrivatePostgresCluster {
    let url: String
    private let environment: [String: String]

    /// The repository's root, where `scripts/` is.
    private static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    /// Starts a cluster (`initdb`, about a second) on a free port.
    static func start() async throws -> PrivatePostgresCluster {
        var lastError = ""
        for _ in 0..<5 {
            let port = Int.random(in: 55_000..<60_000)
            let environment = [
                "JOBQ_PG_DIR": TestScratch.url("pg-\(port)").path, "JOBQ_PG_PORT": "\(port)", "JOBQ_PG_FSYNC": "off",
                "JOBQ_PG_TLS": "off"
            ]
            let (status, output) = try await script("start", environment)
            if status == 0, let url = output.split(separator: "\n").last.map(String.init), url.hasPrefix("postgres") {
                return PrivatePostgresCluster(url: url, environment: environment)
            }
            lastError = output
        }
        throw PostgresTestServer.ServerError(description: "could not start a cluster of the test's own: \(lastError)")
    }

    /// A shell command that runs ``restart()``, for a process that restarts the server itself.
    var restartCommand: String {
        environment.sorted { $0.key < $1.key }.map { "\($0.key)='\($0.value)'" }.joined(separator: " ")
            + " bash '\(Self.root.appendingPathComponent("scripts/postgres.sh").path)' restart"
    }

    /// `pg_ctl restart -m fast`: every session ended (57P01), the server back in a moment.
    func restart() async throws { try await run("restart") }
    /// Stops the server, keeping the cluster for ``resume()``.
    func halt() async throws { try await run("halt") }
    func resume() async throws { try await run("resume") }
    /// Stops the server and deletes the cluster.
    func stop() async { _ = try? await Self.script("stop", environment) }

    private func run(_ command: String) async throws {
        let (status, output) = try await Self.script(command, environment)
        if status != 0 {
            throw PostgresTestServer.ServerError(description: "scripts/postgres.sh \(command) failed: \(output)")
        }
    }

    private static func script(_ command: String, _ environment: [String: String]) async throws -> (Int32, String) {
        let scratch = TestScratch.url("pg-script")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let (out, err) = (scratch.appendingPathComponent("out").path, scratch.appendingPathComponent("err").path)
        let child = try Child(
            executable: URL(fileURLWithPath: "/bin/bash"),
            arguments: [root.appendingPathComponent("scripts/postgres.sh").path, command], environment: environment,
            stdoutPath: out, stderrPath: err)
        await child.wait()
        let output =
            ((try? String(contentsOfFile: out, encoding: .utf8)) ?? "")
            + ((try? String(contentsOfFile: err, encoding: .utf8)) ?? "")
        return (child.terminationStatus, output.trimmingCharacters(in: .whitespacesAndNewlines))
    }
}
