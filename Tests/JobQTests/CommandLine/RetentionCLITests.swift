import Foundation
import Testing

@testable import JobQCore
@testable import JobQSQL

/// `jobq retention`, `jobq queue retention`, and a follower told that events it would resume
/// after were deleted.
@Suite("Retention on the command line")
struct RetentionCLITests {
    @Test func retentionIsShownSetAndRefusedWhenBad() async throws {
        let store = try TemporaryStore()
        let db = store.path
        let shown = try await CLI.run(["retention"], db: db)
        #expect(shown.status == 0 && shown.stdout.contains("succeeded 7d, dead 30d, cancelled 7d"), "\(shown.stdout)")
        #expect(shown.stdout.contains("events") && shown.stdout.contains("30d"))
        let set = try await CLI.run(["retention", "--events", "14d", "--dead", "forever", "--json"], db: db)
        #expect(set.status == 0 && set.stdout.contains("\"eventsSeconds\":1209600"), "\(set.stdout)")
        #expect(set.stdout.contains("\"deadSeconds\":null"))

        let queue = try await CLI.run(["queue", "retention", "thumbs", "--succeeded", "1d"], db: db)
        #expect(
            queue.status == 0 && queue.stdout.contains("keeps succeeded 1d, dead forever, cancelled 7d"),
            "\(queue.stdout)")
        let show = try await CLI.run(["queue", "show", "thumbs"], db: db)
        #expect(show.stdout.contains("succeeded 1d, dead forever"), "\(show.stdout)")
        // What was not given follows the store's default as it changes.
        #expect(try await CLI.run(["retention", "--dead", "90d", "--cancelled", "2d"], db: db).status == 0)
        let follows = try await CLI.run(["queue", "show", "thumbs"], db: db)
        #expect(follows.stdout.contains("succeeded 1d, dead 90d, cancelled 2d"), "\(follows.stdout)")
        let back = try await CLI.run(["queue", "retention", "thumbs", "--default"], db: db)
        #expect(back.status == 0 && back.stdout.contains("the store's retention"), "\(back.stdout)")

        let bad: [([String], String)] = [
            (["queue", "retention", "q", "--succeeded", "0s"], "positive period"),
            (["queue", "retention", "q", "--dead", "soon"], "--dead"),
            (["queue", "retention", "q"], "give --succeeded"),
            (["queue", "retention", "q", "--default", "--dead", "1d"], "--default alone"),
            (["retention", "--events", "0ms"], "positive period")
        ]
        for (arguments, message) in bad {
            let result = try await CLI.run(arguments, db: db)
            #expect(result.status == 2 && result.stderr.contains(message), "\(arguments): \(result.stderr)")
        }
        for (arguments, message) in [
            (["work", "--until-empty", "--cleaner-every", "10ms"], "100ms or more"),
            (["work", "--until-empty", "--no-cleaner", "--cleaner-every", "1m"], "not both")
        ] {
            let result = try await CLI.run(arguments, db: db)
            #expect(result.status == 2 && result.stderr.contains(message), "\(arguments): \(result.stderr)")
        }
        let after = try await CLI.run(["retention", "--json"], db: db)
        #expect(after.stdout.contains("\"eventsSeconds\":1209600") && !after.stdout.contains("\"q\""), "unchanged")
    }

    /// Events deleted past a follower's cursor: `jobq events --since N` exits 4 and says how to
    /// go on; from 0 (the oldest kept) it reads.
    @Test func aFollowerBehindDeletedEventsExitsFour() async throws {
        let store = try TemporaryStore()
        let db = store.path
        #expect(try await CLI.run(["enqueue", "sum", "--param", "a=1", "--param", "b=2"], db: db).status == 0)
        #expect(try await CLI.run(["work", "--until-empty"], db: db).status == 0)
        #expect(try await CLI.run(["prune", "--older-than", "1ms"], db: db).status == 0)
        let behind = try await CLI.run(["events", "--since", "1"], db: db)
        #expect(behind.status == 4 && behind.stderr.contains("were deleted"), "\(behind.status) \(behind.stderr)")
        #expect(try await CLI.run(["events"], db: db).status == 0)
    }

    /// Events of no job (here a schedule's) deleted by `jobq prune` tell followers too.
    @Test func pruningEventsOfNoJobTellsFollowers() async throws {
        let store = try TemporaryStore()
        let db = store.path
        for name in ["a", "b"] {
            let added = try await CLI.run(["schedule", "add", name, "echo", "--every", "1h"], db: db)
            #expect(added.status == 0, "\(added.stderr)")
        }
        let events = try await CLI.run(["events"], db: db)
        #expect(events.stdout.split(separator: "\n").count == 2, "\(events.stdout)")
        try await Task.sleep(for: .milliseconds(20))
        #expect(try await CLI.run(["prune", "--older-than", "1ms"], db: db).status == 0)
        let behind = try await CLI.run(["events", "--since", "1"], db: db)
        #expect(behind.status == 4 && behind.stderr.contains("were deleted"), "\(behind.status) \(behind.stderr)")
    }
}
