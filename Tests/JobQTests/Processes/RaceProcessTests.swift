import Foundation
import Testing

@testable import JobQCore
@testable import JobQSQL
@testable import JobQSQLite

/// Triggers, unique jobs and schedulers with several processes on one store: the `jobq`
/// commands, and `jobq-test-helper` processes racing through the library.
@Suite("Triggers, unique jobs and schedulers across processes", .serialized)
struct RaceProcessTests {
    static let helper = CLI.binary.deletingLastPathComponent().appendingPathComponent("jobq-test-helper")

    /// Starts the helper in a racing mode; its summary line lands in `<name>.out`.
    static func race(_ store: TemporaryStore, _ name: String, _ arguments: [String]) throws -> Child {
        try Child(
            executable: helper,
            arguments: arguments + [
                "--db", store.path, "--log", store.directory.appendingPathComponent("\(name).log").path
            ],
            environment: [:], stdoutPath: store.directory.appendingPathComponent("\(name).out").path,
            stderrPath: store.directory.appendingPathComponent("\(name).err").path)
    }

    static func output(_ store: TemporaryStore, _ name: String) -> String {
        let read = { (suffix: String) in
            (try? String(
                contentsOfFile: store.directory.appendingPathComponent("\(name).\(suffix)").path, encoding: .utf8))
                ?? ""
        }
        return read("out") + read("err")
    }

    /// `new X existed Y` / `made X deduplicated Y` / `made X` as numbers.
    static func numbers(_ line: String) -> [Int] {
        line.split(whereSeparator: { !$0.isNumber }).compactMap { Int($0) }
    }

    @Test func triggerCommandsEmitAndRefuseBadInput() async throws {
        let store = try TemporaryStore()
        let db = store.path
        let refused: [([String], String)] = [
            (["trigger", "add", "app.launched", "a", "ehco"], "unknown executor 'ehco'"),
            (["trigger", "add", "app.launched", "a", "echo", "--payload", "[1]"], "the payload must be a JSON object"),
            (["trigger", "add", "app.launched", "a", "echo", "--payload", "{nope"], "--payload"),
            (["trigger", "add", "app launched", "a", "echo"], "event name 'app launched' must be"),
            (
                ["trigger", "add", "app.launched", "a", "echo", "--depends-on", "b"],
                "depends on 'b', which is not a task"
            ),
            (["emit", "app.launched", "--payload", "{nope"], "the payload of event 'app.launched'")
        ]
        for (arguments, message) in refused {
            let result = try await CLI.run(arguments, db: db)
            #expect(result.status == 2, "\(arguments) exits 2, got \(result.status): \(result.stderr)")
            #expect(result.stderr.contains(message), "\(arguments): \(result.stderr)")
        }
        #expect(try await CLI.run(["trigger", "list", "--json"], db: db).stdout.isEmpty, "nothing was stored")

        for arguments in [
            ["migrate", "shell", "--payload", #"{"script": "true"}"#, "--priority", "10", "--once"],
            ["warm", "echo", "--depends-on", "migrate", "--queue", "boot"],
            ["ping", "echo", "--priority", "5"]
        ] {
            let added = try await CLI.run(["trigger", "add", "app.launched"] + arguments, db: db)
            #expect(added.status == 0, "\(added.stderr)")
        }
        let cycle = try await CLI.run(
            ["trigger", "add", "app.launched", "migrate", "shell", "--depends-on", "warm"], db: db)
        #expect(cycle.status == 2)
        #expect(cycle.stderr.contains("cycle (migrate -> warm -> migrate)"), "\(cycle.stderr)")
        let list = try await CLI.run(["trigger", "list"], db: db).stdout
        #expect(
            list.contains("migrate") && list.contains("once") && list.contains("warm") && list.contains("migrate"),
            "\(list)")

        let emitted = try await CLI.run(
            ["emit", "app.launched", "--payload", #"{"version": "2.1"}"#, "--dedupe", "boot-1"], db: db)
        #expect(emitted.status == 0, "\(emitted.stderr)")
        let ids = emitted.stdout.split(separator: "\n").map(String.init)
        #expect(ids.count == 3)
        let jobs = try await ids.asyncMap { try await CLITests.job(db, $0) }
        // Priority order (migrate 10, ping 5), warm after migrate, which it waits for.
        #expect(
            jobs.map { $0["name"] as? String } == ["app.launched/migrate", "app.launched/ping", "app.launched/warm"])
        #expect(jobs.map { $0["state"] as? String } == ["ready", "ready", "waiting"])
        #expect((jobs[2]["payload"] as? [String: Any])?["event"] as? [String: String] == ["version": "2.1"])

        let again = try await CLI.run(["emit", "app.launched", "--dedupe", "boot-1"], db: db)
        #expect(again.status == 0)
        #expect(again.stdout.split(separator: "\n").map(String.init) == ids, "the first emit's ids")
        #expect(again.stderr.contains("already emitted with dedupe key 'boot-1'"), "\(again.stderr)")

        #expect(try await CLI.run(["trigger", "pause", "app.launched", "ping"], db: db).status == 0)
        let second = try await CLI.run(["emit", "app.launched"], db: db)
        #expect(second.stdout.split(separator: "\n").count == 1, "migrate ran once, ping is paused: only warm")
        #expect(try await CLI.run(["trigger", "resume", "app.launched", "ping"], db: db).status == 0)
        let removeRefused = try await CLI.run(["trigger", "remove", "app.launched", "migrate"], db: db)
        #expect(removeRefused.status == 1)
        #expect(removeRefused.stderr.contains("depends on migrate"), "\(removeRefused.stderr)")
        #expect(try await CLI.run(["trigger", "remove", "app.launched", "warm"], db: db).status == 0)
        #expect(try await CLI.run(["trigger", "remove", "app.launched", "warm"], db: db).status == 3)
        let nothing = try await CLI.run(["emit", "app.closed"], db: db)
        #expect(nothing.status == 0 && nothing.stdout.isEmpty)
        #expect(nothing.stderr.contains("has no active tasks"))

        let changes = try await EventProcessTests.events(db, ["--kind", "trigger"]).compactMap {
            ($0["data"] as? [String: Any])?["change"] as? String
        }
        #expect(changes == ["added", "added", "added", "emitted", "paused", "emitted", "resumed", "removed", "emitted"])
    }

    @Test func emitsFromTwoProcessesAtOnceMakeEachDedupedEmitOnceAndTheOnceTaskOnce() async throws {
        let store = try TemporaryStore()
        let queue = try store.open()
        func add(_ task: String, priority: Int = 0, dependsOn: [String] = [], once: Bool = false) async throws {
            try await queue.addTrigger(
                Trigger(
                    event: "app.launched", task: task,
                    request: try JobRequest(executor: "echo", payloadJSON: "{}", options: .init(priority: priority)),
                    dependsOn: dependsOn, once: once))
        }
        try await add("setup", priority: 9, once: true)
        try await add("sync", dependsOn: ["setup"])
        try await add("ping", priority: 3)
        let emitters = try (0..<2).map {
            try Self.race(store, "emit\($0)", ["emit", "--event", "app.launched", "--count", "60"])
        }
        for emitter in emitters { await emitter.wait() }
        for (index, emitter) in emitters.enumerated() {
            #expect(emitter.terminationStatus == 0, "\(Self.output(store, "emit\(index)"))")
        }
        let counts = (0..<2).map { Self.numbers(Self.output(store, "emit\($0)")) }
        // 60 distinct dedupe keys: each made its jobs in exactly one of the two processes.
        #expect(counts[0][1] + counts[1][1] == 60, "\(counts)")
        let jobs = try await queue.jobs(limit: 1000)
        #expect(jobs.filter { $0.name == "app.launched/setup" }.count == 1, "the once task ran once")
        #expect(jobs.filter { $0.name == "app.launched/sync" }.count == 60)
        #expect(jobs.filter { $0.name == "app.launched/ping" }.count == 60)
        #expect(counts[0][0] + counts[1][0] == jobs.count)
        // Every emit's sync job waited for that emit's setup job only when setup ran with it.
        #expect(jobs.filter { $0.name == "app.launched/sync" && $0.state == .waiting }.count == 1)
    }

    @Test func twoProcessesEnqueueingTheSameKeysMakeOneJobPerKey() async throws {
        let store = try TemporaryStore()
        _ = try store.open()  // migrated once, before the race
        let racers = try (0..<2).map {
            try Self.race(store, "unique\($0)", ["enqueue-unique", "--keys", "10", "--count", "1000"])
        }
        for racer in racers { await racer.wait() }
        for (index, racer) in racers.enumerated() {
            #expect(racer.terminationStatus == 0, "\(Self.output(store, "unique\(index)"))")
        }
        let counts = (0..<2).map { Self.numbers(Self.output(store, "unique\($0)")) }
        #expect(counts[0][0] + counts[1][0] == 10, "one new job per key across both processes: \(counts)")
        #expect(counts[0][1] + counts[1][1] == 1990)
        let jobs = try await store.open().jobs(limit: 100)
        #expect(jobs.count == 10)
        #expect(Set(jobs.compactMap(\.uniqueKey)) == Set((0..<10).map { "key-\($0)" }))

        // The CLI says when a key was already held, and exits 0 with the existing id.
        let db = store.path
        let first = try await CLI.run(["enqueue", "echo", "--unique", "nightly", "--unique-for", "1h"], db: db)
        #expect(first.status == 0 && first.stderr.isEmpty, "\(first.stderr)")
        let second = try await CLI.run(["enqueue", "echo", "--unique", "nightly", "--payload", #"{"x": 1}"#], db: db)
        #expect(second.status == 0)
        #expect(second.stdout == first.stdout)
        #expect(second.stderr.contains("already holds unique key 'nightly'; nothing was enqueued"), "\(second.stderr)")
        for (arguments, message) in [
            (["--unique-for", "1h"], "need --unique KEY"),
            (["--unique", "k", "--unique-states", "ready,bogus"], "--unique-states: unknown state 'bogus'"),
            (["--unique", "k", "--unique-for", "1h", "--unique-states", "ready"], "name no finished state"),
            (["--unique", "", "--unique-for", "1h"], "a unique key must be 1 to 200 bytes of UTF-8, got 0 bytes")
        ] {
            let result = try await CLI.run(["enqueue", "echo"] + arguments, db: db)
            #expect(result.status == 2, "\(arguments): \(result.stderr)")
            #expect(result.stderr.contains(message), "\(arguments): \(result.stderr)")
        }
        #expect(try await store.open().jobs(limit: 100).count == 11, "refused enqueues stored nothing")
    }

    @Test func twoSchedulerProcessesOverASimulatedHourMakeOneJobPerOccurrenceEvenWhenOneIsKilled() async throws {
        let store = try TemporaryStore()
        let queue = try store.open()
        // The simulated hour starts at the next full minute, where the cron schedule (added now)
        // has its first occurrence.
        let start = Date(timeIntervalSince1970: (Date().timeIntervalSince1970 / 60).rounded(.down) * 60 + 60)
        let request = try JobRequest(executor: "echo", payloadJSON: "{}")
        try await queue.addSchedule(
            Schedule(name: "every-10s", request: request, timing: .every(.seconds(10), start: start)))
        try await queue.addSchedule(
            Schedule(name: "minutely", request: request, timing: .cron(try CronExpression("* * * * *"))))
        try await queue.addSchedule(
            Schedule(name: "quarterly", request: request, timing: .every(.seconds(900), times: 4, start: start)))
        #expect(try await queue.schedule("minutely")?.nextRunAt == start)
        // Looks every 2 simulated seconds: every occurrence is 10s or more apart, so none is missed.
        let arguments = ["schedule-race", "--from", ISO8601.string(start), "--seconds", "3600", "--step", "2"]
        let racers = try (0..<2).map { try Self.race(store, "sched\($0)", arguments) }
        // Kill the first once it is a third of the way through its simulated hour.
        let log = store.directory.appendingPathComponent("sched0.log").path
        try await EventProcessTests.waitFor("the first scheduler to pass 20 minutes", timeout: 60) {
            ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").contains("tick 1200\n")
        }
        kill(racers[0].processIdentifier, SIGKILL)
        for racer in racers { await racer.wait() }
        #expect(racers[0].terminationReason == .uncaughtSignal && racers[0].terminationStatus == SIGKILL)
        #expect(racers[1].terminationStatus == 0, "\(Self.output(store, "sched1"))")
        // A third one replays the whole hour again after both: it makes nothing new.
        let replay = try Self.race(
            store, "sched2", ["schedule-race", "--from", ISO8601.string(start), "--seconds", "3600", "--step", "10"])
        await replay.wait()
        #expect(Self.numbers(Self.output(store, "sched2")) == [0], "\(Self.output(store, "sched2"))")

        let every = try await queue.scheduleRuns("every-10s", limit: 1000)
        #expect(every.count == 361, "an occurrence every 10s from the start through an hour later")
        #expect(Set(every.map(\.occurrence)).count == every.count)
        let minutely = try await queue.scheduleRuns("minutely", limit: 1000)
        #expect(minutely.map(\.occurrence!) == (0...60).reversed().map { start.addingTimeInterval(Double($0) * 60) })
        let quarterly = try await queue.scheduleRuns("quarterly", limit: 100)
        #expect(quarterly.map(\.occurrence!) == (0..<4).reversed().map { start.addingTimeInterval(Double($0) * 900) })
        #expect(try await queue.schedule("every-10s")?.made == 361)
        #expect(try await queue.schedule("quarterly")?.made == 4)
    }
}

extension Array {
    func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var results: [T] = []
        for element in self { results.append(try await transform(element)) }
        return results
    }
}
