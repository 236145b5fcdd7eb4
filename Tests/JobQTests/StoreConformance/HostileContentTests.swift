import Foundation
import JobQ
import Testing

@testable import JobQCore
@testable import JobQSQL

/// Hostile values through every text a user can put in, on every store: each is refused where
/// it enters (a clear error, nothing stored) or stored and read back as given, the same on
/// SQLite and PostgreSQL; and the store keeps working: healthy jobs in the same queue and in
/// another still complete, and the dashboard's pages answer 200.
@Suite("Hostile content")
struct HostileContentTests {
    struct Value: Sendable, CustomStringConvertible {
        let description: String
        let text: String
        /// Printable text a name may be (no control character, at most 200 bytes).
        var fitsAName: Bool { text.utf8.count <= 200 && !text.unicodeScalars.contains(where: Label.isControl) }
        var hasNUL: Bool { text.utf8.contains(0) }
    }

    static let values: [Value] = [
        Value(description: "NUL", text: "a\u{0}b"),
        Value(description: "terminal escapes", text: "\u{1B}[2J\u{1B}]0;owned\u{7}x"),
        Value(description: "newline and CR", text: "line\nbreak\r"),
        Value(description: "C1 control", text: "a\u{85}b"),
        Value(description: "bidi override", text: "\u{202E}gnp.exe"),
        Value(description: "markup", text: "<script>alert(1)</script>&amp;\"'"),
        Value(description: "combining and emoji", text: "e\u{301}😀"),
        Value(description: "512 KiB", text: String(repeating: "x", count: 512 * 1024))
    ]

    static func json(_ object: Any) throws -> String {
        String(decoding: try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]), as: UTF8.self)
    }

    /// Healthy jobs in `queue` and in another queue complete, and the dashboard shows `shown`.
    static func storeStillWorks(_ queue: JobQueue, beside name: String, showing shown: [JobID]) async throws {
        let same = try await queue.enqueue(
            try JobRequest(executor: "echo", payloadJSON: "{}", options: .init(queue: name)))
        let other = try await queue.enqueue(
            try JobRequest(executor: "echo", payloadJSON: "{}", options: .init(queue: "healthy-other")))
        try await work(
            queue, executors: BuiltinExecutors.all + [HostileExecutor()], queues: [name, "healthy-other"],
            options: quickOptions(stopWhen: .queuesEmpty), limit: .seconds(60))
        #expect(try await queue.job(same.id)?.state == .succeeded)
        #expect(try await queue.job(other.id)?.state == .succeeded)
        let dashboard = try await RunningDashboard(
            queue: queue, options: .init(storeName: "hostile", access: .loopbackOnly))
        for path in ["/", "/jobs", "/jobs?queue=healthy-other", "/batches", "/triggers"] + shown.map({ "/jobs/\($0)" })
        {
            let page = try await HTTP.get(dashboard.base + path)
            #expect(page.status == 200, "\(path): \(page.status)")
            #expect(!page.body.contains("<script>alert(1)"), "\(path) renders markup escaped")
        }
    }

    /// Payload strings and keys: a NUL is refused (the error says where); everything else is
    /// stored and read back exactly.
    @Test(arguments: TestStore.all) func payloadStringsAndKeys(store: TestStore) async throws {
        let queue = try await store.open()
        var stored: [JobID] = []
        for value in Self.values {
            for payload in [try Self.json(["s": value.text]), try Self.json([value.text: 1])] {
                do {
                    let job = try await queue.enqueue(
                        try JobRequest(executor: "echo", payloadJSON: payload, options: .init(queue: "hostile")))
                    #expect(!value.hasNUL, "\(value) was stored")
                    let read = try #require(try await queue.job(job.id))
                    #expect(
                        try JSONSerialization.jsonObject(with: Data(read.payloadJSON.utf8)) as? NSDictionary
                            == JSONSerialization.jsonObject(with: Data(payload.utf8)) as? NSDictionary,
                        "\(value) read back as stored")
                    stored.append(job.id)
                } catch JobQueueError.invalidInput(let message) {
                    #expect(value.hasNUL, "\(value) refused: \(message.prefix(200))")
                    #expect(message.contains("escaped NUL"))
                }
            }
        }
        // Numbers beyond Int64 and Double: stored as the text they are, read back unchanged.
        let numbers = #"{"big":123456789012345678901234567890,"huge":1e400,"tiny":-1e-400}"#
        do {
            let job = try await queue.enqueue(
                try JobRequest(executor: "echo", payloadJSON: numbers, options: .init(queue: "hostile")))
            #expect(try await queue.job(job.id)?.payloadJSON == numbers)
            stored.append(job.id)
        } catch JobQueueError.invalidInput(let message) {
            #expect(message.contains("not valid JSON"), "\(message)")
        }
        try await Self.storeStillWorks(queue, beside: "hostile", showing: stored)
    }

    /// Names (queue, lane, partition, batch, job name, unique key): control characters and
    /// more than 200 bytes are refused, with nothing stored; the rest is kept as given.
    @Test(arguments: TestStore.all) func names(store: TestStore) async throws {
        let queue = try await store.open()
        var stored: [JobID] = []
        for value in Self.values {
            let variants: [(String, JobOptions)] = [
                ("queue", JobOptions(queue: value.text)), ("lane", JobOptions(lane: value.text)),
                ("partition", JobOptions(partition: value.text)), ("name", JobOptions(name: value.text)),
                ("unique key", JobOptions(unique: UniqueKey(value.text)))
            ]
            for (what, options) in variants {
                do {
                    let job = try await queue.enqueue(
                        try JobRequest(executor: "echo", payloadJSON: "{}", options: options))
                    #expect(value.fitsAName, "\(what) \(value) was stored")
                    let read = try #require(try await queue.job(job.id))
                    #expect(read.queue == options.queue && read.name == options.name, "\(what) \(value) read back")
                    stored.append(job.id)
                } catch JobQueueError.invalidInput(let message) {
                    #expect(!value.fitsAName, "\(what) \(value) refused: \(message.prefix(200))")
                    #expect(!message.unicodeScalars.contains(where: Label.isControl), "the message prints cleanly")
                }
            }
            do {
                try await queue.createBatch(value.text)
                #expect(value.fitsAName, "batch \(value) was created")
            } catch JobQueueError.invalidInput {
                #expect(!value.fitsAName, "batch \(value) refused")
            }
        }
        #expect(try await queue.jobs(matching: JobQuery(limit: 1000)).count == stored.count, "refusals stored nothing")
        try await Self.storeStillWorks(queue, beside: Self.values[4].text, showing: stored)
    }

    /// What an attempt hands back: a result with a NUL ends its job dead saying why; an error
    /// or a progress message with a NUL is kept with U+FFFD in its place; the rest as given.
    @Test(arguments: TestStore.all) func resultsErrorsAndProgress(store: TestStore) async throws {
        let queue = try await store.open()
        var jobs: [(JobID, Value, HostileExecutor.Mode)] = []
        for value in Self.values {
            for mode in [HostileExecutor.Mode.result, .error, .progress] {
                let job = try await queue.enqueue(
                    HostileExecutor.self,
                    .init(marked: value.text.replacingOccurrences(of: "\u{0}", with: "NUL"), mode: mode),
                    options: .init(queue: "hostile", maxAttempts: 1))
                jobs.append((job.id, value, mode))
            }
        }
        try await work(
            queue, executors: [HostileExecutor()], queues: ["hostile"], options: quickOptions(stopWhen: .queuesEmpty),
            limit: .seconds(60))
        for (id, value, mode) in jobs {
            let job = try #require(try await queue.job(id))
            switch mode {
            case .result:
                if value.hasNUL {
                    #expect(job.state == .dead && (job.error ?? "").contains("the result holds an escaped NUL"))
                } else {
                    #expect(job.state == .succeeded, "\(value): \(job.state) \(job.error ?? "")")
                    let result = try JSONSerialization.jsonObject(with: Data((job.resultJSON ?? "").utf8)) as? [String]
                    #expect(result == [value.text], "\(value) result read back")
                }
            case .error:
                #expect(job.state == .dead && job.error == StoredText.plain(value.text), "\(value) error")
            case .progress:
                #expect(job.state == .succeeded, "\(value): \(job.state) \(job.error ?? "")")
            }
        }
        let progress = try await queue.events(after: 0, filter: EventFilter(kinds: [.progress]), limit: 1000)
        #expect(progress.count == Self.values.count, "every progress message was recorded")
        try await Self.storeStillWorks(queue, beside: "hostile", showing: jobs.map(\.0))
    }

    /// An event's payload: a NUL is refused; the rest is recorded in the feed as given.
    @Test(arguments: TestStore.all) func eventPayloads(store: TestStore) async throws {
        let queue = try await store.open()
        for value in Self.values {
            do {
                _ = try await queue.emit("hostile-event", payloadJSON: try Self.json(["s": value.text]))
                #expect(!value.hasNUL, "\(value) was emitted")
            } catch JobQueueError.invalidInput(let message) {
                #expect(value.hasNUL && message.contains("escaped NUL"), "\(value): \(message.prefix(200))")
            }
            await #expect(throws: JobQueueError.self, "a schedule named \(value)") {
                _ = try await queue.addSchedule(
                    Schedule(
                        name: value.text, request: try JobRequest(executor: "echo", payloadJSON: "{}"),
                        timing: .every(.seconds(60))))
            }
        }
        try await Self.storeStillWorks(queue, beside: "hostile", showing: [])
    }
}

/// Hands a hostile text back as its result, its error or its progress message (the payload
/// carries `NUL` for a NUL, which no payload may hold).
struct HostileExecutor: Executor {
    static let name = "test-hostile"
    enum Mode: String, Codable, Sendable { case result, error, progress }
    struct Input: Codable, Sendable {
        var marked: String
        var mode: Mode
    }

    func run(_ input: Input, context: JobContext) async throws -> [String] {
        let text = input.marked.replacingOccurrences(of: "NUL", with: "\u{0}")
        switch input.mode {
        case .result: return [text]
        case .error: throw NonRetryableError(text)
        case .progress:
            try await context.progress(0.5, message: text)
            return []
        }
    }
}
