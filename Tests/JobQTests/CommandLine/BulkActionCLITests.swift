import Foundation
import Testing

@testable import JobQCore

/// `jobq retry|cancel|delete --where`, and `jobq delete ID`, through the real binary.
@Suite("jobq retry, cancel and delete --where")
struct BulkActionCLITests {
    @Test(arguments: TestStore.all) func dryRunChangesNothingThenTheActionDoesAndSaysWhatItSkipped(kind: TestStore)
        async throws
    {
        let db = try await kind.location()
        let lines = (0..<12).map { index in
            #"{"executor":"fail","payload":{"customer":"\#(index < 8 ? "acme" : "bob")","message":"boom"},"maxAttempts":1}"#
        }
        let file = TestScratch.url("bulk-jobs.jsonl")
        try (lines.joined(separator: "\n") + "\n").write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        try #require(try await CLI.run(["enqueue", "--file", file.path], db: db).status == 0)
        try #require(try await CLI.run(["work", "--until-empty"], db: db).status == 0)
        func count(_ filter: String) async throws -> String {
            try await CLI.run(["list", "--where", filter, "--count"], db: db).stdout
        }

        let dry = try await CLI.run(["retry", "--where", #"state:dead /customer = "acme""#, "--dry-run"], db: db)
        #expect(dry.status == 0, "\(dry.stderr)")
        #expect(
            dry.stdout.hasPrefix(#"would retry up to 8 jobs matching state:dead /customer = "acme""#), "\(dry.stdout)")
        #expect(dry.stdout.split(separator: "\n").count == 10, "the sentence, a header and 8 jobs: \(dry.stdout)")
        #expect(try await count("state:dead") == "12\n", "a dry run changes nothing")

        let retry = try await CLI.run(["retry", "--where", #"/customer = "acme""#], db: db)
        #expect(retry.status == 0, "\(retry.stderr)")
        #expect(retry.stdout == "retried 8 of 8 matching jobs\n")
        #expect(try await count("state:ready") == "8\n")

        let again = try await CLI.run(["retry", "--where", #"/customer = "acme""#], db: db)
        #expect(again.stdout.hasPrefix("retried 0 of 8 matching jobs\nskipped 8: ready (e.g. job "), "\(again.stdout)")

        let cancel = try await CLI.run(["cancel", "--where", "state:ready"], db: db)
        #expect(cancel.stdout == "cancelled 8 of 8 matching jobs\n", "\(cancel.stderr)")
        let delete = try await CLI.run(["delete", "--where", #"-/customer = "bob""#], db: db)
        #expect(delete.stdout == "deleted 8 of 8 matching jobs\n", "\(delete.stderr)")
        #expect(try await count("") == "4\n")

        let bulkEvents = try await CLI.run(["events", "--kind", "bulk", "--json"], db: db)
        #expect(bulkEvents.stdout.split(separator: "\n").count == 4, "one per action, none for the dry run")

        // One job by id.
        let listed = try await CLI.run(["list", "--json", "--limit", "1"], db: db)
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data(listed.stdout.utf8)) as? [String: Any])
        let id = "\(object["id"] ?? "")"
        let one = try await CLI.run(["delete", id], db: db)
        #expect(one.status == 0 && one.stdout == "job \(id) deleted\n", "\(one.stderr)")
        let missing = try await CLI.run(["delete", id], db: db)
        #expect(missing.status != 0)
        #expect(missing.stderr.contains("no job with id \(id)"))
    }

    @Test func wrongSelectionsAreRefusedWithUsage() async throws {
        let dir = TestScratch.url("bulk-cli")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let db = dir.appendingPathComponent("never.sqlite").path
        for (arguments, words) in [
            (["retry"], "give a job's id, or --where FILTER to retry"),
            (["cancel", "3", "--where", "state:ready"], "not both"),
            (["delete", "3", "--dry-run"], "--dry-run goes with --where"),
            (["delete", "--where", "state:gone"], "unknown state 'gone'")
        ] {
            let result = try await CLI.run(arguments, db: db)
            #expect(result.status == 2, "\(arguments): \(result.stderr)")
            #expect(result.stderr.contains(words), "\(arguments): \(result.stderr)")
        }
        #expect(!FileManager.default.fileExists(atPath: db), "refused before the store was opened")
    }
}
