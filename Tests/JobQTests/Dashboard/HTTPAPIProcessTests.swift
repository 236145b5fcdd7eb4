import Foundation
import Testing

@testable import JobQCore

/// The HTTP API as an operator and a producer in another language meet it: `jobq token`
/// through the real binary, and a Python client (standard library only, Tests/Python) against
/// a real `jobq dashboard` process while a `jobq work` process runs the job.
@Suite("HTTP API: tokens and a Python client")
struct HTTPAPIProcessTests {
    @Test func tokenCommandsMakeListAndRevokeAndRefuseBadInput() async throws {
        let store = try TemporaryStore()
        _ = try store.open()
        let added = try await CLI.run(["token", "add", "ci", "--scope", "read,enqueue"], db: store.path)
        #expect(added.status == 0, "\(added.stderr)")
        let secret = added.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(secret.hasPrefix("jobq_") && secret.count == 45, "the secret alone on stdout: \(added.stdout)")
        #expect(added.stderr.contains("only time its secret is shown"), "\(added.stderr)")

        let list = try await CLI.run(["token", "list"], db: store.path)
        #expect(
            list.status == 0 && list.stdout.contains("ci") && list.stdout.contains("read,enqueue"), "\(list.stdout)")
        #expect(!list.stdout.contains(secret), "the list never shows a secret")
        let json = try await CLI.run(["token", "list", "--json"], db: store.path)
        #expect(json.stdout.contains(#""name":"ci","scopes":["read","enqueue"]"#), "\(json.stdout)")

        let badScope = try await CLI.run(["token", "add", "x", "--scope", "read,admin"], db: store.path)
        #expect(badScope.status == 2 && badScope.stderr.contains("unknown API scope"), "\(badScope.stderr)")
        let taken = try await CLI.run(["token", "add", "ci", "--scope", "read"], db: store.path)
        #expect(taken.status != 0 && taken.stderr.contains("revoke it first"), "\(taken.stderr)")
        let badName = try await CLI.run(["token", "add", "no spaces", "--scope", "read"], db: store.path)
        #expect(badName.status == 2 && badName.stderr.contains("1 to 64 letters"), "\(badName.stderr)")
        #expect(try await JobQueue(path: store.path).apiTokens().count == 1, "refusals changed nothing")

        let revoked = try await CLI.run(["token", "revoke", "ci"], db: store.path)
        #expect(revoked.status == 0 && revoked.stdout.contains("token ci revoked"), "\(revoked.stdout)")
        let again = try await CLI.run(["token", "revoke", "ci"], db: store.path)
        #expect(again.status == 3 && again.stderr.contains("no token named"), "\(again.stderr)")
    }

    @Test(.enabled(if: PythonModules.inCI || PythonModules.available("json"), "python3 is not installed"))
    func aPythonClientEnqueuesWaitsForTheResultAndIsRefusedOnceRevoked() async throws {
        let store = try TemporaryStore()
        _ = try store.open()
        let added = try await CLI.run(["token", "add", "python", "--scope", "enqueue,read"], db: store.path)
        try #require(added.status == 0, "\(added.stderr)")
        let secret = added.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let log = store.directory.appendingPathComponent("dashboard.log").path
        let dashboard = try CLI.startDetached(["dashboard", "--listen", "127.0.0.1:0"], db: store.path, logPath: log)
        let base = try await MetricsEndpointTests.listeningAddress(in: log)
        let workerLog = store.directory.appendingPathComponent("work.log").path
        let worker = try CLI.startDetached(["work", "--queue", "python"], db: store.path, logPath: workerLog)
        let client = try String(
            contentsOf: ReadmeTests.root.appendingPathComponent("Tests/Python/api_client.py"), encoding: .utf8)

        let output = try await PythonModules.run(script: client, arguments: [base, secret, "enqueue-and-wait"])
        let seen = try #require(
            try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: Any], "\(output)")
        #expect(seen["status"] as? Int == 200 && seen["finished"] as? Bool == true, "\(output)")
        #expect(seen["state"] as? String == "succeeded", "\(output)")
        #expect((seen["result"] as? [String: Any])?["sum"] as? Int == 5, "\(output)")
        let id = try #require(seen["id"] as? Int)
        let job = try #require(try await JobQueue(path: store.path).job(JobID(id)))
        #expect(job.state == .succeeded && job.queue == "python" && job.resultJSON == #"{"sum":5}"#)

        let revoked = try await CLI.run(["token", "revoke", "python"], db: store.path)
        #expect(revoked.status == 0, "\(revoked.stderr)")
        let refused = try await PythonModules.run(script: client, arguments: [base, secret, "list"])
        #expect(refused.contains(#""status": 401"#) && refused.contains("not valid here"), "\(refused)")

        for process in [worker, dashboard] {
            kill(process.processIdentifier, SIGTERM)
            await process.wait()
        }
        #expect(dashboard.terminationStatus == 0, "\((try? String(contentsOfFile: log, encoding: .utf8)) ?? "")")
    }
}
