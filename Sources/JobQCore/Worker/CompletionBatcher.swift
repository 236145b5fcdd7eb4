import Foundation
import Logging
import Synchronization

/// Coalesces the outcomes of many attempts, and the start marks of the attempts that began
/// since the last transaction, into one write transaction.
///
/// Nothing waits: a slot hands over its outcome, notes its next job's start, and runs it. The
/// first item to arrive starts a flush, so nothing waits on a timer either; items that arrive
/// while a transaction is being written join the next one. Under load that makes one
/// transaction per batch of finished jobs instead of one per job. After each transaction the
/// handler learns, per outcome, whether the fence accepted it.
///
/// A start mark (`started_at` and the `started` event) lets a reclaim tell an attempt that ran
/// from a job that only sat in a dead worker's buffer, which keeps its attempt. A job whose
/// worker dies before its mark is written is treated as never started; the store ends one that
/// keeps doing so after its attempts (a poison job cannot loop), see
/// ``Store/reclaimExpiredLeases()``.
///
/// A transaction that fails (the store busy past its timeout behind `jobq prune` or a large
/// import, a full disk, a dropped connection) loses nothing: its outcomes and start marks go
/// back to the front of the queue and are written again after a backoff, as often as it takes.
/// Every write is fenced, so a late one is safe; meanwhile the jobs stay held and their leases
/// renewed. Only ``waitUntilIdle(givingUpAfter:)`` at shutdown gives up on them, leaving the
/// jobs to their lease. That holds for transient errors (``StoreErrorKind``); a batch the store
/// refuses for good (one item's data, say) is written item by item, and the item it refuses
/// ends dead with an error that says so, so that one bad value never wedges the worker.
final class CompletionBatcher: Sendable {
    struct Item: Sendable {
        let job: ClaimedJob
        let outcome: AttemptOutcome
        let race: AttemptRace
        /// Set when the attempt was a durable function whose step records were still queued
        /// when it ended: the outcome is written after them (``AfterStepRecords``).
        var afterRecords: AfterStepRecords? = nil
    }

    /// An outcome that waits here, not in its slot, for its function's step records: the slot
    /// takes its next job at once, and the outcome joins the first transaction after the one
    /// that writes the records. If a record was not written, the outcome is what that makes
    /// of the attempt instead.
    struct AfterStepRecords: Sendable {
        let run: FunctionRun
        /// The attempt's outcome when a record was not written (`problem`): nil when the
        /// attempt is not this worker's any more (nothing to record), else the failure's.
        let otherwise: @Sendable (_ problem: any Error) -> AttemptOutcome?
    }

    /// An attempt's start, noted by its run (the race), so that a refused start can refuse
    /// that run's outcome and no other.
    struct Start: Sendable {
        let job: ClaimedJob
        let race: AttemptRace
    }

    /// A finished step of a durable function, written with the next transaction after the
    /// outcomes and start marks queued before it (``recordStep(_:)``).
    struct StepItem: Sendable {
        let record: StepRecord
        /// Told once, when the record is written or what kept it from being written is known.
        let settled: @Sendable (StepRecordResult) -> Void
    }

    /// What one transaction did: the items, and the ids the fence refused (or the error that
    /// rolled the transaction back).
    typealias Handler = @Sendable (_ items: [Item], _ refused: Result<Set<JobID>, any Error>) -> Void

    private struct State {
        var pending: [Item] = []
        var starts: [Start] = []
        var steps: [StepItem] = []
        /// Runs whose start mark the store refused, their outcome not submitted yet.
        var refusedRuns: Set<ObjectIdentifier> = []
        /// Starts noted and not written yet, and who waits for them (``startWritten(_:)``).
        var unwrittenStarts: Set<JobID> = []
        var startWaiters: [JobID: [CheckedContinuation<Void, Never>]] = [:]
        var flushing = false
        var idleWaiters: [CheckedContinuation<Void, Never>] = []
        /// Failed transactions in a row.
        var failures = 0
        /// Set at shutdown when the store has not taken the outcomes in time: the next failure
        /// reports them as not written instead of retrying.
        var givingUp = false
    }

    /// The longest wait between two tries of a failed write.
    static let maximumBackoff: Duration = .seconds(5)

    /// The wait before the next try of a write that failed `failures` times in a row: doubling
    /// from 50 ms, at most ``maximumBackoff``.
    static func backoff(afterFailures failures: Int) -> Duration {
        min(maximumBackoff, .milliseconds(50) * (1 << min(failures - 1, 10)))
    }

    private let store: any JobStore & FunctionStore
    private let workerID: String
    private let logger: Logger
    private let state = Mutex(State())
    /// The handler in a box: a closure kept directly in a `Mutex` is re-wrapped in two
    /// reabstraction thunks by every `withLock` (the inout access writes the converted closure
    /// back), so each call went through a chain as long as the worker's history of flushes.
    private final class HandlerBox: Sendable {
        let call: Handler
        init(_ call: @escaping Handler) { self.call = call }
    }
    private let handler = Mutex<HandlerBox?>(nil)

    /// What became of a claim asked for with a transaction.
    enum ClaimResult: Sendable {
        /// The claim took these jobs (maybe none), committed with the completions.
        case claimed([ClaimedJob])
        /// The claim failed and was undone alone; the completions are committed.
        case failed(any Error)
        /// The transaction failed: nothing was claimed.
        case notMade
    }

    /// The pool's side of claims made with completions (``JobStore/claimsWithCompletions``):
    /// `ask` says, just before a transaction is written, what to claim with it (nil: nothing);
    /// `handle` gets what that claim did, before the transaction's outcomes are reported.
    private final class ClaimerBox: Sendable {
        let ask: @Sendable () -> ClaimRequest?
        let handle: @Sendable (ClaimRequest, ClaimResult) -> Void
        init(
            ask: @escaping @Sendable () -> ClaimRequest?,
            handle: @escaping @Sendable (ClaimRequest, ClaimResult) -> Void
        ) {
            self.ask = ask
            self.handle = handle
        }
    }
    private let claimer = Mutex<ClaimerBox?>(nil)

    init(store: any JobStore & FunctionStore, workerID: String, logger: Logger) {
        self.store = store
        self.workerID = workerID
        self.logger = logger
    }

    /// Sets what runs after each transaction (the pool sets it before it claims anything).
    func onRecorded(_ handler: @escaping Handler) {
        let box = HandlerBox(handler)
        self.handler.withLock { $0 = box }
    }

    /// Lets each transaction claim for the pool too, when the store can (see ``ClaimerBox``).
    func claimWithCompletions(
        ask: @escaping @Sendable () -> ClaimRequest?, handle: @escaping @Sendable (ClaimRequest, ClaimResult) -> Void
    ) {
        guard store.claimsWithCompletions else { return }
        let box = ClaimerBox(ask: ask, handle: handle)
        claimer.withLock { $0 = box }
    }

    /// Queues one outcome for the next transaction. `moreComing` says other jobs are about to
    /// finish, so a new flush lets them join; otherwise it writes at once. `startFollows` says
    /// the caller is about to call ``noteStart(_:race:)`` or ``kick()``, which writes it.
    func submit(_ item: Item, moreComing: Bool = true, startFollows: Bool = false) {
        let startFlush = state.withLock { state in
            state.pending.append(item)
            guard !startFollows else { return false }
            defer { state.flushing = true }
            return !state.flushing
        }
        if startFlush {
            // Unstructured on purpose: a flush must finish even if the submitting task is
            // cancelled (a worker shutting down still records its released jobs).
            startImmediately { await self.flush(gathering: moreComing) }
        }
    }

    /// Writes the outcomes queued with `startFollows` when no start follows after all.
    func kick() {
        let startFlush = state.withLock { state in
            guard !state.flushing, !state.pending.isEmpty || !state.starts.isEmpty else { return false }
            state.flushing = true
            return true
        }
        if startFlush { startImmediately { await self.flush(gathering: false) } }
    }

    /// Notes that `job`'s attempt starts now, run under `race`; the mark is written with the
    /// next transaction, together with the outcomes queued so far. The caller does not wait
    /// for it.
    ///
    /// An outcome is recorded only after its attempt's start: when the store refuses the start
    /// (the job was released, cancelled or taken over meanwhile), the run's outcome is refused
    /// too, never written. Otherwise a worker whose lease expired while it ran a job, and that
    /// claimed the job again (the same attempt number, since an unstarted attempt is not
    /// counted), could record the old run's outcome for the new claim, an attempt with no
    /// `started` event.
    func noteStart(_ job: ClaimedJob, race: AttemptRace) {
        var job = job
        job.startTime = Date().timeIntervalSince1970
        let startFlush = state.withLock { state in
            state.starts.append(Start(job: job, race: race))
            state.unwrittenStarts.insert(job.id)
            defer { state.flushing = true }
            return !state.flushing
        }
        if startFlush { startImmediately { await self.flush(gathering: true) } }
    }

    /// Queues a finished step's record for the next transaction; the caller does not wait for
    /// it (a durable function goes on to its next step) and learns through `item.settled`.
    /// Steps are written after the start marks and outcomes queued before them, in the order
    /// they were queued.
    func recordStep(_ item: StepItem) {
        let startFlush = state.withLock { state in
            state.steps.append(item)
            defer { state.flushing = true }
            return !state.flushing
        }
        if startFlush { startImmediately { await self.flush(gathering: true) } }
    }

    /// Returns once the start noted for job `id` (``noteStart(_:race:)``) has been written, refused,
    /// or given up on; at once when none is waiting to be written. A job's progress waits for
    /// it, so that its `started` event comes before its updates.
    func startWritten(_ id: JobID) async {
        await withCheckedContinuation { continuation in
            let written = state.withLock { state in
                guard state.unwrittenStarts.contains(id) else { return true }
                state.startWaiters[id, default: []].append(continuation)
                return false
            }
            if written { continuation.resume() }
        }
    }

    /// Marks these starts as no longer waiting to be written, and wakes who waits for them.
    private func settleStarts(_ starts: [Start]) {
        guard !starts.isEmpty else { return }
        let waiters = state.withLock { state in
            starts.map(\.job).flatMap { job -> [CheckedContinuation<Void, Never>] in
                state.unwrittenStarts.remove(job.id)
                return state.startWaiters.removeValue(forKey: job.id) ?? []
            }
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Returns once every submitted outcome has been written; with `givingUpAfter`, outcomes the
    /// store still refuses after that long are given up (reported as not written).
    func waitUntilIdle(givingUpAfter limit: Duration? = nil) async {
        let deadline = limit.map { limit in
            Task {
                try? await Task.sleep(for: limit)
                if !Task.isCancelled { self.state.withLock { $0.givingUp = true } }
            }
        }
        defer { deadline?.cancel() }
        await withCheckedContinuation { continuation in
            let idle = state.withLock { state in
                if !state.flushing && state.pending.isEmpty { return true }
                state.idleWaiters.append(continuation)
                return false
            }
            if idle { continuation.resume() }
        }
    }

    private func flush(gathering: Bool) async {
        // Let the jobs that are finishing at this moment add their outcomes first: a few
        // yields cost microseconds and turn one transaction per job into one per batch. A lone
        // job (an idle pool's) does not wait for company.
        if gathering {
            for _ in 0..<3 { await Task.yield() }
        }
        while true {
            let (grabbed, starts, steps, refusedStart, idleWaiters) = state.withLock { state in
                var batch: [Item] = []
                var dropped: [Item] = []
                for item in state.pending {
                    if state.refusedRuns.remove(ObjectIdentifier(item.race)) != nil {
                        dropped.append(item)
                    } else {
                        batch.append(item)
                    }
                }
                let starts = state.starts
                let steps = state.steps
                state.pending = []
                state.starts = []
                state.steps = []
                guard batch.isEmpty, starts.isEmpty, steps.isEmpty else {
                    return (batch, starts, steps, dropped, [CheckedContinuation<Void, Never>]?.none)
                }
                state.flushing = false
                defer { state.idleWaiters = [] }
                return (batch, starts, steps, dropped, state.idleWaiters)
            }
            if let idleWaiters {
                if !refusedStart.isEmpty {
                    // Their start was refused: not this worker's attempt any more.
                    handler.withLock { $0 }?.call(refusedStart, .success(Set(refusedStart.map(\.job.id))))
                }
                for waiter in idleWaiters { waiter.resume() }
                return
            }
            var (batch, dropped) = (grabbed, refusedStart)
            // Outcomes behind step records written in this transaction wait for the next one.
            let behindSteps = Self.outcomesBehind(steps, in: &batch, dropped: &dropped)
            if !dropped.isEmpty {
                // Their start was refused, or a step record found the attempt lost: not this
                // worker's attempt any more.
                handler.withLock { $0 }?.call(dropped, .success(Set(dropped.map(\.job.id))))
            }
            defer { if !behindSteps.isEmpty { state.withLock { $0.pending = behindSteps + $0.pending } } }
            // Everything grabbed was dropped: look again.
            if batch.isEmpty, starts.isEmpty, steps.isEmpty { continue }
            guard !batch.isEmpty || !starts.isEmpty else {
                await write(steps)
                continue
            }
            let result: Result<Set<JobID>, any Error>
            let claim = claimer.withLock { $0 }
            let request = claim?.ask()
            do {
                // A refused start mark needs nothing here: the job was cancelled or taken over,
                // which the pool's ownership checks notice and stop.
                let outcomes = batch.map { ($0.job, $0.outcome) }
                let refused: (outcomes: Set<JobID>, starts: Set<JobID>)
                if let request {
                    let report = try await store.recordOutcomes(
                        outcomes, starting: starts.map(\.job), workerID: workerID, claiming: request)
                    refused = (report.refusedOutcomes, report.refusedStarts)
                    claim?.handle(request, report.claimFailure.map { .failed($0) } ?? .claimed(report.claimed))
                } else {
                    refused = try await store.recordOutcomes(outcomes, starting: starts.map(\.job), workerID: workerID)
                }
                result = .success(refused.outcomes)
                noteRefused(starts, refused: refused.starts, batch: batch)
                state.withLock { $0.failures = 0 }
                settleStarts(starts)
            } catch {
                if let request { claim?.handle(request, .notMade) }
                // Written after what was queued before them: back in front, or given up with it.
                putBack(steps)
                var unwritten = (items: batch, starts: starts)
                if StoreErrorKind(of: error) == .permanent {
                    // One item's data, most likely: retried as it is, the batch would fail
                    // forever and hold up every outcome queued behind it.
                    logger.error(
                        "the store refused \(batch.count) outcome(s) and \(starts.count) start(s) for good (\(error)); writing them one by one to find the one it refuses"
                    )
                    unwritten = await writeOneByOne(batch, starts: starts)
                    if unwritten.items.isEmpty, unwritten.starts.isEmpty { continue }
                }
                let (failures, givingUp) = state.withLock { state in
                    state.failures += 1
                    return (state.failures, state.givingUp)
                }
                if !givingUp {
                    // Back to the front, before anything that arrived meanwhile; tried again
                    // together with it after the backoff.
                    state.withLock { state in
                        state.pending = unwritten.items + state.pending
                        state.starts = unwritten.starts + state.starts
                    }
                    let backoff = Self.backoff(afterFailures: failures)
                    logger.storeFailure(
                        .error, error,
                        "could not record \(unwritten.items.count) outcome(s) and \(unwritten.starts.count) start(s) (\(error)); the jobs stay held and the write is tried again in \(DurationParser.format(backoff)) (failure \(failures) in a row)"
                    )
                    try? await Task.sleep(for: backoff)
                    continue
                }
                settleStarts(unwritten.starts)
                giveUp(stepsAfter: error)
                if !unwritten.items.isEmpty { handler.withLock { $0 }?.call(unwritten.items, .failure(error)) }
                continue
            }
            if !steps.isEmpty { await write(steps) }
            if !batch.isEmpty { handler.withLock { $0 }?.call(batch, result) }
        }
    }

    /// Resolves the outcomes in `batch` that follow their function's step records
    /// (``AfterStepRecords``): those whose records are among `steps` (written by this
    /// transaction) are taken out and returned, to go with the next one; the others' records
    /// are settled, and each stays as it is (all written), becomes the failure a record's
    /// problem makes of it, or moves to `dropped` (the attempt was lost).
    private static func outcomesBehind(_ steps: [StepItem], in batch: inout [Item], dropped: inout [Item]) -> [Item] {
        guard batch.contains(where: { $0.afterRecords != nil }) else { return [] }
        let stepJobs = Set(steps.lazy.map(\.record.job.id))
        var behind: [Item] = []
        var resolved: [Item] = []
        resolved.reserveCapacity(batch.count)
        for item in batch {
            guard let after = item.afterRecords else {
                resolved.append(item)
                continue
            }
            if stepJobs.contains(item.job.id) {
                behind.append(item)
            } else if let problem = after.run.recordProblem {
                if let outcome = after.otherwise(problem) {
                    resolved.append(Item(job: item.job, outcome: outcome, race: item.race))
                } else {
                    dropped.append(item)
                }
            } else {
                resolved.append(Item(job: item.job, outcome: item.outcome, race: item.race))
            }
        }
        batch = resolved
        return behind
    }

    /// At shutdown, when the store has not taken what was queued in time: the steps put back
    /// are reported failed with it.
    private func giveUp(stepsAfter error: any Error) {
        let steps = state.withLock { state in
            defer { state.steps = [] }
            return state.steps
        }
        for item in steps { item.settled(.failed(error)) }
    }

    /// Steps go back to the front of the queue.
    private func putBack(_ steps: [StepItem]) {
        guard !steps.isEmpty else { return }
        state.withLock { $0.steps = steps + $0.steps }
    }

    /// Writes step records in one transaction. A transient failure puts them back in front
    /// after a backoff (at shutdown, when giving up, they are reported failed); a batch the
    /// store refuses for good is written record by record, and a record it refuses is
    /// reported failed, which fails its function's attempt.
    private func write(_ steps: [StepItem]) async {
        do {
            let lost = try await store.recordSteps(steps.map(\.record), workerID: workerID)
            state.withLock { $0.failures = 0 }
            for item in steps { item.settled(lost.contains(item.record.job.id) ? .lost : .written) }
        } catch  where StoreErrorKind(of: error) == .permanent && steps.count > 1 {
            logger.error(
                "the store refused \(steps.count) step record(s) for good (\(error)); writing them one by one to find the one it refuses"
            )
            for (index, item) in steps.enumerated() {
                do {
                    let lost = try await store.recordSteps([item.record], workerID: workerID)
                    item.settled(lost.isEmpty ? .written : .lost)
                } catch  where StoreErrorKind(of: error) == .transient {
                    putBack(Array(steps[index...]))
                    return
                } catch {
                    item.settled(.failed(error))
                }
            }
        } catch  where StoreErrorKind(of: error) == .permanent {
            steps.first?.settled(.failed(error))
        } catch {
            let (failures, givingUp) = state.withLock { state in
                state.failures += 1
                return (state.failures, state.givingUp)
            }
            guard !givingUp else {
                for item in steps { item.settled(.failed(error)) }
                return
            }
            putBack(steps)
            let backoff = Self.backoff(afterFailures: failures)
            logger.storeFailure(
                .error, error,
                "could not record \(steps.count) step(s) (\(error)); the functions' jobs stay held and the write is tried again in \(DurationParser.format(backoff)) (failure \(failures) in a row)"
            )
            try? await Task.sleep(for: backoff)
        }
    }

    /// Writes a batch the store refused for good item by item, so that one item's data costs
    /// only that item. An outcome refused for good is replaced by `dead`, with an error that
    /// says the store refused it, and given up (left to its lease) if even that is refused; a
    /// start mark refused for good is dropped, and its attempt runs unmarked as if its worker
    /// had died before writing it. Returns what a transient error left unwritten, for the
    /// caller's backoff.
    private func writeOneByOne(_ batch: [Item], starts: [Start]) async -> (items: [Item], starts: [Start]) {
        var unwritten: (items: [Item], starts: [Start]) = ([], [])
        var interrupted = false
        for start in starts {
            guard !interrupted else {
                unwritten.starts.append(start)
                continue
            }
            do {
                let refused = try await store.recordOutcomes([], starting: [start.job], workerID: workerID)
                noteRefused([start], refused: refused.starts, batch: [])
            } catch let error where StoreErrorKind(of: error) == .transient {
                interrupted = true
                unwritten.starts.append(start)
                continue
            } catch {
                logger.error(
                    "job \(start.job.id): the store refused its start mark (\(error)); the attempt runs without it")
            }
            settleStarts([start])
        }
        for item in batch {
            guard !interrupted else {
                unwritten.items.append(item)
                continue
            }
            var item = item
            var result: Result<Set<JobID>, any Error>?
            if state.withLock({ $0.refusedRuns.remove(ObjectIdentifier(item.race)) }) != nil {
                result = .success([item.job.id])
            }
            for replaced in [false, true] where result == nil && !interrupted {
                do {
                    result = .success(
                        try await store.recordOutcomes([(item.job, item.outcome)], starting: [], workerID: workerID)
                            .outcomes)
                } catch let error where StoreErrorKind(of: error) == .transient {
                    interrupted = true
                    unwritten.items.append(item)
                } catch let error where replaced {
                    result = .failure(error)
                } catch {
                    let reason = StoredText.plain("\(error)")
                    logger.error(
                        "job \(item.job.id): the store refused its outcome (\(reason)); recording it dead instead")
                    item = Item(
                        job: item.job,
                        outcome: .dead(
                            error: "jobq could not record this attempt's outcome: the store refused it (\(reason))",
                            timedOut: false),
                        race: item.race)
                }
            }
            if let result { handler.withLock { $0 }?.call([item], result) }
        }
        if !interrupted { state.withLock { $0.failures = 0 } }
        return unwritten
    }

    /// Remembers the runs whose start the store refused (`refused`, by job id), so that their
    /// outcomes are refused when they come; those in `batch` the store already refused.
    private func noteRefused(_ starts: [Start], refused: Set<JobID>, batch: [Item]) {
        guard !refused.isEmpty else { return }
        let inBatch = Set(batch.lazy.map { ObjectIdentifier($0.race) })
        state.withLock { state in
            for start in starts where refused.contains(start.job.id) {
                let run = ObjectIdentifier(start.race)
                if !inBatch.contains(run) { state.refusedRuns.insert(run) }
            }
        }
    }
}

/// What became of a step's record queued with ``CompletionBatcher/recordStep(_:)``.
enum StepRecordResult: Sendable {
    case written
    /// The attempt is no longer this worker's: nothing written.
    case lost
    /// The store did not take it (refused it for good, or at shutdown did not answer in time).
    case failed(any Error)
}
