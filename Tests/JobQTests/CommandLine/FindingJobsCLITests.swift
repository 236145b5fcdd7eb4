import Foundation
import Testing

@testable import JobQCore

/// `jobq list --where`: the filter language through the real binary.
@Suite("jobq list --where")
struct FindingJobsCLITests {
    @Test(arguments: TestStore.all) func listAndCountByPayloadAndFields(kind: TestStore) async throws {
        let db = try await kind.location()
        var ids: [String] = []
        for (payload, queue) in [
            (#"{"customer":"acme","amount":150}"#, "default"), (#"{"customer":"acme","amount":50}"#, "billing"),
            (#"{"customer":"bob","amount":150}"#, "billing")
        ] {
            let result = try await CLI.run(["enqueue", "echo", "--payload", payload, "--queue", queue], db: db)
            try #require(result.status == 0, "enqueue failed: \(result.stderr)")
            ids.append(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
        }
        func listed(_ arguments: [String]) async throws -> [String] {
            let result = try await CLI.run(["list", "--json"] + arguments, db: db)
            try #require(result.status == 0, "list \(arguments) failed: \(result.stderr)")
            return try result.stdout.split(separator: "\n").map {
                let object = try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
                return "\(object["id"] ?? "")"
            }
        }
        #expect(try await listed(["--where", #"/customer = "acme" /amount > 100"#]) == [ids[0]])
        // A first term negated with '-' is the option's value, not an option.
        #expect(try await listed(["--where", #"-/customer = "acme""#]) == [ids[2]])
        #expect(try await listed(["--where", "/amount = 150", "--queue", "billing"]) == [ids[2]])
        #expect(try await listed(["--where", "state:ready", "--limit", "2"]) == [ids[0], ids[1]])
        #expect(try await listed(["--where", "state:ready", "--after", ids[0]]) == [ids[1], ids[2]])

        let count = try await CLI.run(["list", "--where", "queue:billing", "--count"], db: db)
        #expect(count.status == 0)
        #expect(count.stdout == "2\n")

        let table = try await CLI.run(["list", "--where", "/customer = \"bob\""], db: db)
        #expect(table.stdout.split(separator: "\n").count == 2, "header and one row: \(table.stdout)")
        #expect(table.stdout.contains("billing"))
    }

    @Test(arguments: TestStore.all) func indexAddListAndRemove(kind: TestStore) async throws {
        let db = try await kind.location()
        let added = try await CLI.run(["index", "add", "/customer"], db: db)
        #expect(added.status == 0 && added.stdout.hasPrefix("payload member /customer is indexed"), "\(added.stderr)")
        let listed = try await CLI.run(["index", "list", "--json"], db: db)
        #expect(listed.stdout.hasPrefix(#"{"pointer":"/customer","createdAt":""#), "\(listed.stdout)")
        let bad = try await CLI.run(["index", "add", "customer"], db: db)
        #expect(bad.status == 2 && bad.stderr.contains("JSON pointer"), "\(bad.stderr)")
        #expect(try await CLI.run(["index", "remove", "/customer"], db: db).status == 0)
        let missing = try await CLI.run(["index", "remove", "/customer"], db: db)
        #expect(missing.status != 0 && missing.stderr.contains("no index on the payload member"), "\(missing.stderr)")
        #expect(try await CLI.run(["index", "list"], db: db).stdout.hasPrefix("no payload member is indexed"))
    }

    @Test func aBadFilterSaysWhereAndExitsTwoBeforeOpeningTheStore() async throws {
        let dir = TestScratch.url("filter-cli")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let db = dir.appendingPathComponent("never.sqlite").path
        let result = try await CLI.run(["list", "--where", "state:dead /amount >> 100"], db: db)
        #expect(result.status == 2)
        #expect(result.stderr.contains("invalid filter at character 20: unknown operator '>>'"), "\(result.stderr)")
        #expect(result.stderr.contains("  state:dead /amount >> 100\n                     ^"), "\(result.stderr)")
        #expect(result.stdout.isEmpty)
        // Refused before the store was opened: no file was created.
        #expect(!FileManager.default.fileExists(atPath: db))
    }
}
