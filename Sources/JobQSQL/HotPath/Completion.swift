import Foundation
import JobQCore

/// A worker's completions in a write transaction: SQLite's, and what a server's own statement
/// leaves (`CompletionSplit` says how a batch is split).
extension SQLStore {
    /// Records the outcomes of attempts in one write transaction, with the starts of the
    /// attempts about to run (a slot's next job starts as its last one is recorded). Each update
    /// is fenced on the job's id, attempt, `running` state and the worker's token, so a worker
    /// whose lease expired (and whose job another worker took over, or an operator cancelled)
    /// changes nothing. Returns the ids whose outcome, and those whose start, the fence refused.
    package func recordInTransaction(
        _ outcomes: [(job: ClaimedJob, outcome: AttemptOutcome)], starting: [ClaimedJob], workerID: String
    ) async throws -> (outcomes: Set<JobID>, starts: Set<JobID>) {
        // Start marks alone make nothing claimable: they are news for event followers only, and
        // wake no worker.
        let audience: CommitAudience = outcomes.isEmpty ? .followers : .workersAndFollowers
        return try await write(.short, audience: audience) { db in
            try StoreSQL.recordCompletions(db, outcomes, starting: starting, workerID: workerID)
        }
    }

    /// ``recordInTransaction(_:starting:workerID:)`` and then, in the same transaction, the claim
    /// of ``claimInTransaction(queues:limit:workerID:lease:startingNow:)``: one commit where a
    /// worker refilling its buffer took two, and a job the completions made ready (a
    /// sequence's next step) is claimed by the commit that unlocked it. The claim runs in a
    /// savepoint: when it fails (one queue's rows, say), it alone is undone and reported, and
    /// the completions commit.
    package func recordInTransaction(
        _ outcomes: [(job: ClaimedJob, outcome: AttemptOutcome)], starting: [ClaimedJob], workerID: String,
        claiming request: ClaimRequest
    ) async throws -> CompletionReport {
        let audience: CommitAudience = outcomes.isEmpty ? .followers : .workersAndFollowers
        return try await write(.short, audience: audience) { db in
            let refused = try StoreSQL.recordCompletions(db, outcomes, starting: starting, workerID: workerID)
            var report = CompletionReport(refusedOutcomes: refused.outcomes, refusedStarts: refused.starts)
            do {
                report.claimed = try db.inSavepoint { try StoreSQL.claim(db, request, workerID: workerID) }
            } catch {
                report.claimFailure = error
            }
            return report
        }
    }
}

extension StoreSQL {
    /// Records attempts' outcomes and starts inside the caller's transaction, split as
    /// ``CompletionSplit`` says (a success takes its start along): self-contained successes
    /// (``SelfContainedSuccess``) many to an UPDATE, every other outcome with its consequences.
    /// Returns the ids whose outcome, and those whose start, the fence refused.
    static func recordCompletions(
        _ db: some SQLTransaction, _ outcomes: [(job: ClaimedJob, outcome: AttemptOutcome)], starting: [ClaimedJob],
        workerID: String
    ) throws -> (outcomes: Set<JobID>, starts: Set<JobID>) {
        // Read once the write lock is held: a start is stamped when it commits.
        db.stamp(StoreSQL.now())
        let split = CompletionSplit(outcomes, starting: starting) { _, outcome in outcome.isSuccess }
        let refusedStarts = try StoreSQL.markStarted(db, split.separateStarts, workerID: workerID)
        let rest = split.rest(refusedStarts: refusedStarts, written: [])
        guard !rest.outcomes.isEmpty else {
            return split.refusals(refusedStarts: refusedStarts, refusedOutcomes: [])
        }
        let facts = try StoreFacts.read(db)
        let successes = rest.outcomes.lazy.filter(\.outcome.isSuccess).map(\.job)
        let leaves = try StoreSQL.leafTreeJobs(db, successes.filter { $0.treeNode != nil })
        // Whether its end matters to nothing but, at most, its workflow group's counters: in
        // no batch or lane, and no job of a tree node whose results make more jobs.
        func countsIntoGroupAtMost(_ job: ClaimedJob) -> Bool {
            job.batch == nil && job.lane == nil && (job.treeNode == nil || leaves.contains(job.id))
        }
        let withDependents = try StoreSQL.jobsWithDependents(
            db, successes.filter(countsIntoGroupAtMost).map(\.id), facts: facts)
        var refused: Set<JobID> = []
        var selfContained: [StoreSQL.SelfContainedSuccess] = []
        for (job, outcome) in rest.outcomes {
            let start = split.startsWithOutcome[job.id]
            if let success = StoreSQL.SelfContainedSuccess(
                job: job, outcome: outcome, start: start, facts: facts,
                countsIntoGroupAtMost: countsIntoGroupAtMost(job), hasDependents: withDependents.contains(job.id))
            {
                selfContained.append(success)
                continue
            }
            let done = try StoreSQL.record(
                db, job: job, outcome: outcome, fence: .worker(workerID), facts: facts, start: start)
            if !done { refused.insert(job.id) }
        }
        refused.formUnion(
            try StoreSQL.recordSelfContainedSuccesses(
                db, selfContained, workerID: workerID, facts: facts))
        return split.refusals(refusedStarts: refusedStarts, refusedOutcomes: refused)
    }
}
