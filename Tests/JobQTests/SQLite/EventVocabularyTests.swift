import Foundation
import Testing

@testable import JobQCore

/// The data of every kind of event, as the story of `EventBytesTests` tells it on SQLite, is
/// the recorded vocabulary (`Tests/Fixtures/event-vocabulary.txt`): followers parse these
/// objects, so a change to a key, its order or a value's form shows here and is made on
/// purpose (`JOBQ_WRITE_FIXTURES=1 swift test --filter writeEventVocabulary` records it anew).
@Suite("Event vocabulary")
struct EventVocabularyTests {
    static let file = FixtureTests.directory.appendingPathComponent("event-vocabulary.txt")

    static func told() async throws -> String {
        let events = try await EventBytesTests.story(on: try await TestStore.sqlite.open())
        return EventKind.allCases.flatMap { kind in
            events.filter { $0.kind == kind }.map { "\(kind.rawValue)\t\($0.text)" }.sorted()
        }.joined(separator: "\n") + "\n"
    }

    @Test func everyKindOfEventWritesTheRecordedData() async throws {
        let recorded = try String(contentsOf: Self.file, encoding: .utf8).split(separator: "\n")
        let told = try await Self.told().split(separator: "\n")
        #expect(told.count == recorded.count, "\(told.count) events told, \(recorded.count) recorded")
        for (line, expected) in zip(told, recorded) where line != expected {
            Issue.record("told:     \(line)\nrecorded: \(expected)")
        }
    }

    @Test(.enabled(if: ProcessInfo.processInfo.environment["JOBQ_WRITE_FIXTURES"] == "1"))
    func writeEventVocabulary() async throws {
        try await Self.told().write(to: Self.file, atomically: true, encoding: .utf8)
    }
}
