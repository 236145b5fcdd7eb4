import Foundation
import GRDB
import Testing

@testable import JobQCore
@testable import JobQSQL
@testable import JobQSQLite

/// Each bad input exits 2 (3 for unknown ids) with a message naming the bad part, and leaves
/// the store exactly as it was.
@Suite("Bad input on the command line")
struct BadInputTests {
    struct Case: CustomTestStringConvertible, Sendable {
        let arguments: [String]
        let status: Int32
        let message: String
        var testDescription: String { arguments.joined(separator: " ") }
    }

    static let cases: [Case] = [
        Case(arguments: ["enqueue", "sum", "--payload", "{a: 1}"], status: 2, message: "is not valid JSON"),
        Case(arguments: ["enqueue", "sum", "--payload", #"{"a":1}"#, "--param", "b=2"], status: 2, message: "one way"),
        Case(arguments: ["enqueue", "sum", "--delay", "soon"], status: 2, message: "invalid duration 'soon'"),
        Case(arguments: ["enqueue", "sum", "--delay", "10"], status: 2, message: "has no unit"),
        Case(
            arguments: ["enqueue", "sum", "--delay", "1s", "--at", "2030-01-01T00:00:00Z"], status: 2,
            message: "not both"),
        Case(arguments: ["enqueue", "sum", "--at", "tomorrow"], status: 2, message: "ISO 8601"),
        Case(arguments: ["enqueue", "sum", "--timeout", "0s"], status: 2, message: "--timeout"),
        Case(arguments: ["enqueue", "sum", "--max-attempts", "0"], status: 2, message: "--max-attempts"),
        Case(arguments: ["enqueue", "sum", "--max-attempts", "-3"], status: 2, message: "max-attempts"),
        Case(arguments: ["enqueue", "sum", "--priority", "99999999999999999999"], status: 2, message: "--priority"),
        Case(arguments: ["enqueue", "sum", "--param", "novalue"], status: 2, message: "key=value"),
        Case(arguments: ["enqueue", "no-such-executor"], status: 2, message: "unknown executor 'no-such-executor'"),
        Case(arguments: ["enqueue", "echo", "--", "ls"], status: 2, message: "only for the shell executor"),
        Case(arguments: ["enqueue"], status: 2, message: "name an executor"),
        Case(arguments: ["enqueue", "--file"], status: 2, message: "--file"),
        Case(arguments: ["enqueue", "--file", "/nonexistent/jobs.jsonl"], status: 2, message: "cannot read"),
        Case(
            arguments: [
                "enqueue", "sum", "--queue", "it's'; DROP TABLE jobs;--", "--payload",
                #"{"a":"'; DELETE FROM jobs;--"}"#, "--max-attempts", "1001"
            ], status: 2, message: "--max-attempts"),
        Case(arguments: ["list", "--state", "finished"], status: 2, message: "unknown state 'finished'"),
        Case(arguments: ["list", "--limit", "-1"], status: 2, message: "--limit"),
        Case(arguments: ["prune", "--older-than", "7x"], status: 2, message: "unknown unit 'x'"),
        Case(arguments: ["prune", "--older-than", "1d", "--state", "ready"], status: 2, message: "only final states"),
        Case(arguments: ["work", "--concurrency", "0"], status: 2, message: "--concurrency"),
        Case(arguments: ["work", "--lease", "1"], status: 2, message: "--lease"),
        Case(arguments: ["show", "abc"], status: 2, message: "abc"),
        Case(arguments: ["show", "777"], status: 3, message: "no job with id 777"),
        Case(arguments: ["cancel", "777"], status: 3, message: "no job with id 777"),
        Case(arguments: ["retry", "777"], status: 3, message: "no job with id 777"),
        Case(arguments: ["frobnicate"], status: 2, message: "frobnicate"),
        Case(
            arguments: [
                "enqueue", "echo", "--payload", "\"" + String(repeating: "x", count: 100_000) + "\"", "--max-attempts",
                "0"
            ], status: 2, message: "--max-attempts"),
        Case(arguments: ["enqueue", "sum", "--priority", "-99999999999999999999"], status: 2, message: "--priority"),
        Case(arguments: ["events", "--since", "-5"], status: 2, message: "--since"),
        Case(arguments: ["wait", "1", "--timeout", "forever"], status: 2, message: "invalid duration 'forever'"),
        Case(arguments: ["batch", "close", "nope"], status: 3, message: "no batch named 'nope'"),
        Case(arguments: ["track", "add", "t"], status: 2, message: "--member"),
        Case(arguments: ["migrate", "up", "--to", "-1"], status: 2, message: "--to"),
        // What no store can hold, or a terminal would act on, is refused where it enters.
        Case(
            arguments: ["enqueue", "echo", "--payload", #"{"customer":"a\u0000b"}"#], status: 2,
            message: #"holds an escaped NUL (\u0000) at byte 14"#),
        Case(arguments: ["enqueue", "echo", "--payload", #"["\ud800"]"#], status: 2, message: "low-surrogate"),
        Case(
            arguments: ["enqueue", "echo", "--queue", "a\u{1B}[2Jb"], status: 2,
            message: "queue name 'a?[2Jb' holds the control character U+001B"),
        Case(arguments: ["enqueue", "echo", "--queue", "two\nlines"], status: 2, message: "U+000A"),
        Case(
            arguments: ["enqueue", "echo", "--queue", String(repeating: "é", count: 101)], status: 2,
            message: "queue name must be 1 to 200 bytes of UTF-8, got 202 bytes"),
        Case(
            arguments: ["enqueue", "echo", "--partition", String(repeating: "p", count: 5_000)], status: 2,
            message: "a partition must be 1 to 200 bytes of UTF-8, got 5000 bytes"),
        Case(arguments: ["pause", "a\u{7}"], status: 2, message: "U+0007"),
        // JSON pointers as RFC 6901 reads them; each option's error under its own name.
        Case(
            arguments: ["queue", "limit", "q", "--concurrency", "2", "--partition-by", "/a~"], status: 2,
            message: "'~0' or '~1'"),
        Case(
            arguments: ["queue", "limit", "q", "--concurrency", "2", "--partition-by", "/a~2b"], status: 2,
            message: "'~0' or '~1'"),
        Case(
            arguments: ["queue", "limit", "q", "--rate", "5/1s", "--partition-by", "/a~"], status: 2,
            message: "--partition-by: the JSON pointer")
    ]

    /// Every table's rows, to compare before and after.
    static func snapshot(_ path: String) throws -> String {
        try DatabaseQueue(path: path).read { db in
            var text = ""
            // A store from before the `jobq_` prefix (an old fixture) names its tables bare.
            let prefix = try db.tableExists("jobq_jobs") ? "jobq_" : ""
            for table in ["jobs", "queues", "workers", "schema_migrations"].map({ prefix + $0 }) {
                for row in try Row.fetchAll(db, sql: "SELECT * FROM \(table) ORDER BY 1") {
                    text += "\(table): \(row)\n"
                }
            }
            return text
        }
    }

    @Test(arguments: cases)
    func badInputExitsWithAMessageAndChangesNothing(_ testCase: Case) async throws {
        let store = try TemporaryStore()
        try await CLI.run(["enqueue", "sum", "--param", "a=1", "--param", "b=2"], db: store.path)
        try await CLI.run(["enqueue", "fail", "--queue", "other", "--delay", "1h"], db: store.path)
        let before = try Self.snapshot(store.path)
        let result = try await CLI.run(testCase.arguments, db: store.path)
        #expect(result.status == testCase.status, "stderr: \(result.stderr)")
        #expect(result.stderr.contains(testCase.message), "stderr: \(result.stderr)")
        #expect(result.stdout.isEmpty)
        #expect(try Self.snapshot(store.path) == before)
    }

    @Test(arguments: [
        (
            #"{"executor": "sum", "payload": {"a": 1, "b": 2}}"# + "\n" + #"{"executor": "sum", "payload": "#, "line 2",
            "not valid JSON"
        ),
        (#"{"executor": "sum"}"# + "\n\n" + #"{"executor": "bogus"}"#, "line 3", "unknown executor 'bogus'"),
        (#"["not", "an", "object"]"#, "line 1", "expected a JSON object"),
        (#"{"executor": "sum", "priority": "high"}"#, "line 1", "'priority' must be a whole number"),
        (#"{"executor": "sum", "priority": 1e300}"#, "line 1", "'priority'"),
        (#"{"executor": "sum", "colour": "red"}"#, "line 1", "unknown key 'colour'"),
        (#"{"executor": "sum", "delay": "5 minutes"}"#, "line 1", "invalid duration"),
        (#"{"payload": {}}"#, "line 1", "'executor' is missing"),
        ("", "has no jobs", "has no jobs")
    ])
    func malformedFileIsRefusedWhole(content: String, line: String, message: String) async throws {
        let store = try TemporaryStore()
        try await CLI.run(["enqueue", "sum", "--param", "a=1", "--param", "b=2"], db: store.path)
        let before = try Self.snapshot(store.path)
        let file = store.directory.appendingPathComponent("jobs.jsonl")
        try content.write(to: file, atomically: true, encoding: .utf8)
        let result = try await CLI.run(["enqueue", "--file", file.path], db: store.path)
        #expect(result.status == 2)
        #expect(result.stderr.contains(line), "stderr: \(result.stderr)")
        #expect(result.stderr.contains(message), "stderr: \(result.stderr)")
        #expect(try Self.snapshot(store.path) == before)
    }

    @Test func payloadOverTheSizeLimitIsRefused() async throws {
        let store = try TemporaryStore()
        let file = store.directory.appendingPathComponent("big.jsonl")
        let line =
            #"{"executor": "echo", "payload": ""# + String(repeating: "x", count: JobRequest.maximumPayloadBytes + 10)
            + #""}"#
        try line.write(to: file, atomically: true, encoding: .utf8)
        let result = try await CLI.run(["enqueue", "--file", file.path], db: store.path)
        #expect(result.status == 2)
        #expect(result.stderr.contains("line 1") && result.stderr.contains("over the limit of 1048576 bytes"))
        #expect(try await CLITests.jobs(store.path).isEmpty)
    }

    @Test func invalidUTF8FileIsRefused() async throws {
        let store = try TemporaryStore()
        let file = store.directory.appendingPathComponent("jobs.jsonl")
        try Data([0x7B, 0xFF, 0xFE, 0x7D, 0x0A]).write(to: file)
        let result = try await CLI.run(["enqueue", "--file", file.path], db: store.path)
        #expect(result.status == 2)
        #expect(result.stderr.contains("UTF-8"))
    }

    @Test func storeThatIsNotADatabaseFailsClearly() async throws {
        let store = try TemporaryStore()
        try Data(repeating: 0x41, count: 8192).write(to: URL(fileURLWithPath: store.path))
        let result = try await CLI.run(["status"], db: store.path)
        #expect(result.status == 1)
        #expect(result.stderr.contains("not a jobq store"))
    }
}

/// Bytes that are not UTF-8 in an argument are refused, not replaced and stored.
@Suite("Arguments that are not UTF-8")
struct InvalidUTF8ArgumentTests {
    @Test func anArgumentThatIsNotUTF8IsRefusedAndNothingIsStored() async throws {
        let store = try TemporaryStore()
        #expect(try await CLI.run(["migrate", "up"], db: store.path).status == 0)
        let out = store.directory.appendingPathComponent("out").path
        let err = store.directory.appendingPathComponent("err").path
        // Only a shell can hand jobq the raw byte 0xFF: Swift strings are always UTF-8.
        let script = #"exec "$0" --db "$1" enqueue sum --payload "$(printf '{"a":"\377"}')""#
        let child = try Child(
            executable: URL(fileURLWithPath: "/bin/sh"), arguments: ["-c", script, CLI.binary.path, store.path],
            environment: [:],
            stdoutPath: out, stderrPath: err)
        await child.wait()
        #expect(child.terminationStatus == 2)
        let message = try String(contentsOfFile: err, encoding: .utf8)
        #expect(message.contains("argument 6 is not valid UTF-8"), "\(message)")
        #expect(try await CLITests.jobs(store.path).isEmpty)
    }
}
