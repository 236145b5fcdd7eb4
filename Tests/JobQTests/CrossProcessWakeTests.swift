import Foundation
import Testing

@testable import JobQ

/// Another process's commit wakes an idle pool and an event follower at once, through the
/// OS's report of the write (inotify), not through polling: the polls here are 10s apart, so
/// anything seen within a few seconds came from the report.
@Suite("Wake-ups across processes")
struct CrossProcessWakeTests {
    #if os(Linux) || os(macOS)
        @Test func anIdlePoolPicksUpAnotherProcesssJobWithoutPolling() async throws {
            let store = try TemporaryStore()
            let queue = try store.open()
            var options = quickOptions(stopWhen: .never)
            options.pollInterval = .seconds(10)
            options.changeCheckInterval = .seconds(10)
            options.runsScheduler = false
            let pool = WorkerPool(queue: queue, concurrency: 2, executors: [SumExecutor()], options: options)
            let running = Task { try await pool.run() }
            defer { running.cancel() }
            // Started and idle: its first look at the store found nothing.
            try await pause(0.5)
            for round in 0..<3 {
                let result = try await CLI.run(["enqueue", "sum", "--payload", #"{"a": \#(round), "b": 1}"#], db: store.path)
                try #require(result.status == 0, "\(result.stderr)")
                let id = try #require(JobID(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)))
                let enqueued = Date()
                try await EventProcessTests.waitFor("job \(id) to be done", timeout: 10) {
                    try await queue.job(id)?.state == .succeeded
                }
                #expect(Date().timeIntervalSince(enqueued) < 3, "round \(round): picked up after \(Date().timeIntervalSince(enqueued))s")
            }
        }

        @Test func anEventFollowerSeesAnotherProcesssCommitWithoutPolling() async throws {
            let store = try TemporaryStore()
            let queue = try store.open()
            let feed = queue.events(EventFilter(kinds: [.enqueued]), since: nil, pollInterval: .seconds(10))
            let first = Task { () -> (JobEvent, Date)? in
                for try await event in feed { return (event, Date()) }
                return nil
            }
            try await pause(0.3)
            let result = try await CLI.run(["enqueue", "sum", "--payload", #"{"a": 1, "b": 2}"#], db: store.path)
            try #require(result.status == 0, "\(result.stderr)")
            let enqueued = Date()
            let timeout = Task {
                try await Task.sleep(for: .seconds(8))
                first.cancel()
            }
            defer { timeout.cancel() }
            let (event, seen) = try #require(try await first.value, "the enqueue was not seen within 8s")
            #expect(event.jobID.map(String.init) == result.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
            #expect(seen.timeIntervalSince(enqueued) < 3)
        }
    #endif
}
