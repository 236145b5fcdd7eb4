import Foundation
import Synchronization

/// Writes an attempt's progress reports to the store, at most one write per `interval`: a report
/// that comes sooner is held, merged with later ones, and written when the interval is up. So a
/// tight loop calling `progress` costs at most a few writes per second, and the latest value
/// always lands.
final class AttemptProgress: Sendable {
    struct Report: Sendable {
        var fraction: Double?
        var message: String?
        var dataJSON: String?

        mutating func merge(_ newer: Report) {
            if newer.fraction != nil { fraction = newer.fraction }
            if newer.message != nil { message = newer.message }
            if newer.dataJSON != nil { dataJSON = newer.dataJSON }
        }
    }

    private struct State {
        var lastWrite: ContinuousClock.Instant?
        var pending: Report?
        var flushScheduled = false
        /// Held reports a scheduled flush has taken and is writing.
        var writing = 0
        /// ``flush()``es waiting for those writes to land.
        var writesLanded: [CheckedContinuation<Void, Never>] = []
    }

    let store: any JobStore
    let job: ClaimedJob
    let workerID: String
    let interval: Duration
    /// Returns once the attempt's start is written (its `started` event goes before updates).
    let startWritten: @Sendable () async -> Void
    private let state = Mutex(State())

    init(
        store: any JobStore, job: ClaimedJob, workerID: String, interval: Duration,
        startWritten: @escaping @Sendable () async -> Void = {}
    ) {
        self.store = store
        self.job = job
        self.workerID = workerID
        self.interval = interval
        self.startWritten = startWritten
    }

    func report(_ report: Report) async throws {
        let now = ContinuousClock.now
        enum Action {
            case writeNow(Report)
            case scheduleFlush(Duration)
            case wait
        }
        let action: Action = state.withLock { state in
            var merged = state.pending ?? Report()
            merged.merge(report)
            if let last = state.lastWrite, now - last < interval {
                state.pending = merged
                if state.flushScheduled { return .wait }
                state.flushScheduled = true
                return .scheduleFlush(interval - (now - last))
            }
            state.pending = nil
            state.lastWrite = now
            return .writeNow(merged)
        }
        switch action {
        case .writeNow(let merged):
            try await write(merged)
        case .scheduleFlush(let delay):
            Task {
                try? await Task.sleep(for: delay)
                let pending = self.state.withLock { state -> Report? in
                    state.flushScheduled = false
                    state.lastWrite = ContinuousClock.now
                    defer { state.pending = nil }
                    if state.pending != nil { state.writing += 1 }
                    return state.pending
                }
                guard let pending else { return }
                try? await self.write(pending)
                let landed = self.state.withLock { state -> [CheckedContinuation<Void, Never>] in
                    state.writing -= 1
                    guard state.writing == 0 else { return [] }
                    defer { state.writesLanded = [] }
                    return state.writesLanded
                }
                for waiter in landed { waiter.resume() }
            }
        case .wait:
            break
        }
    }

    /// Writes a held report now, so the latest progress lands before the outcome. A scheduled
    /// flush that took the last report and is still writing it is waited for first: otherwise
    /// the outcome could be recorded before it, and the report (an executor's last `update`,
    /// say) be refused as late.
    func flush() async {
        let (pending, writing) = state.withLock { state -> (Report?, Bool) in
            defer { state.pending = nil }
            return (state.pending, state.writing > 0)
        }
        // Every attempt ends here: no suspension unless a scheduled write is in flight.
        if writing {
            await withCheckedContinuation { continuation in
                let landed = state.withLock { state in
                    if state.writing == 0 { return true }
                    state.writesLanded.append(continuation)
                    return false
                }
                if landed { continuation.resume() }
            }
        }
        if let pending { try? await write(pending) }
    }

    private func write(_ report: Report) async throws {
        await startWritten()
        try await store.recordProgress(
            job: job, workerID: workerID, fraction: report.fraction, message: report.message, dataJSON: report.dataJSON)
    }
}
