import Foundation
import Testing

@testable import JobQCore

/// `jobq signal` and what `jobq show` says of a durable function, through the real binary.
@Suite("jobq signal and a function's record")
struct SignalCLITests {
    @Test func signalsAreKeptOrRefusedWithWhatToDo() async throws {
        let store = try TemporaryStore()
        let enqueued = try await CLI.run(["enqueue", "echo", "--payload", "{}"], db: store.path)
        try #require(enqueued.status == 0, "\(enqueued.stderr)")
        let id = enqueued.stdout.trimmingCharacters(in: .whitespacesAndNewlines)

        let kept = try await CLI.run(["signal", id, "go", "--payload", #"{"a": 1}"#], db: store.path)
        #expect(kept.status == 0, "\(kept.stderr)")
        #expect(kept.stdout.contains("kept until the job waits for 'go'"), "\(kept.stdout)")

        let unknown = try await CLI.run(["signal", "999999", "go"], db: store.path)
        #expect(unknown.status != 0)
        #expect(unknown.stderr.contains("no job with id 999999"), "\(unknown.stderr)")
        let notJSON = try await CLI.run(["signal", id, "go", "--payload", "{"], db: store.path)
        #expect(notJSON.status != 0)
        #expect(notJSON.stderr.contains("is not JSON"), "\(notJSON.stderr)")

        let worked = try await CLI.run(["work", "--until-empty", "--no-scheduler"], db: store.path)
        #expect(worked.status == 0, "\(worked.stderr)")
        let finished = try await CLI.run(["signal", id, "go"], db: store.path)
        #expect(finished.status != 0)
        #expect(finished.stderr.contains("is succeeded"), "\(finished.stderr)")
        // Only the signal sent while the job could take it was kept.
        let events = try await CLI.run(["events", "--job", id], db: store.path)
        #expect(events.stdout.components(separatedBy: "signal").count - 1 >= 1)
        let rows = try await JobQueue(path: store.path).storedRows("SELECT COUNT(*) AS n FROM jobq_signals")
        #expect(rows.first?["n"] as Int64? == 1)
    }

    @Test func emitResumesTheFunctionsWaitingForItAndShowSaysWhatTheyWaitFor() async throws {
        let store = try TemporaryStore()
        let queue = try JobQueue(path: store.path)
        let waiter = try await queue.enqueue(PaymentWaiter.self, .init(order: 42))
        try await work(
            queue, executors: [PaymentWaiter()], concurrency: 1, options: quickOptions(stopWhen: .queuesEmpty))
        let shown = try await CLI.run(["show", "\(waiter.id)"], db: store.path)
        #expect(shown.status == 0, "\(shown.stderr)")
        #expect(
            shown.stdout.split(separator: "\n").contains {
                $0.contains("event") && $0.contains("order.paid") && $0.contains("waiting")
                    && $0.contains("/order = 42")
            }, "\(shown.stdout)")
        let listed = try await CLI.run(["list", "--where", "awaiting:order.paid"], db: store.path)
        #expect(listed.stdout.contains("\(waiter.id)"), "\(listed.stdout)")

        let other = try await CLI.run(
            ["emit", "order.paid", "--payload", #"{"order": 41, "amount": 1}"#], db: store.path)
        #expect(other.status == 0, "\(other.stderr)")
        #expect(other.stderr.contains("no function waits for it"), "\(other.stderr)")
        let paid = try await CLI.run(
            ["emit", "order.paid", "--payload", #"{"order": 42, "amount": 9}"#], db: store.path)
        #expect(paid.status == 0, "\(paid.stderr)")
        #expect(paid.stdout.isEmpty, "no job was made: \(paid.stdout)")
        #expect(
            paid.stderr.contains("resumed 1 durable function(s) waiting for 'order.paid': \(waiter.id)"),
            "\(paid.stderr)")
        try await work(queue, executors: [PaymentWaiter()], concurrency: 1)
        #expect(
            try await queue.job(waiter.id)?.result(as: PaymentWaiter.Output.self)
                == .init(paid: .init(order: 42, amount: 9)))
    }

    @Test func showListsAFunctionsRecordWhileItSleeps() async throws {
        let store = try TemporaryStore()
        let queue = try JobQueue(path: store.path)
        let napper = try await queue.enqueue(Napper.self, .init(seconds: 3600))
        try await work(
            queue, executors: [Napper()], concurrency: 1, options: quickOptions(stopWhen: .queuesEmpty))
        let shown = try await CLI.run(["show", "\(napper.id)"], db: store.path)
        #expect(shown.status == 0, "\(shown.stderr)")
        #expect(shown.stdout.contains("steps:"), "\(shown.stdout)")
        let lines = shown.stdout.split(separator: "\n")
        #expect(
            lines.contains { $0.contains("step") && $0.contains("before") && $0.contains("done") }, "\(shown.stdout)")
        #expect(lines.contains { $0.contains("sleep") && $0.contains("sleeping") && $0.contains("until") })
        let cancel = try await CLI.run(["cancel", "\(napper.id)"], db: store.path)
        #expect(cancel.status == 0, "\(cancel.stderr)")
        #expect(cancel.stdout.contains("runs once more to compensate"), "\(cancel.stdout)")
    }
}
