import JobQCore

/// How a worker's completions are written, whichever store writes them: the starts of
/// attempts about to run, and the outcomes of attempts that ended, split the one way both
/// stores follow.
///
/// - A start whose job's outcome is in the same batch and is written in the same UPDATE (a
///   short job that started and ended between two writes) goes with it: one row change, not two.
///   Which outcomes take their start along is the store's (`goesWithItsStart`).
/// - The other starts are written first, on their own. An attempt whose start the fence refused
///   is not the worker's any more (cancelled, or taken over): its outcome is refused with it,
///   and must not land on whichever claim holds the job now.
/// - An outcome the fence refused takes its start with it when they went together.
///
/// SQLite writes everything in one transaction (`StoreSQL.recordCompletions`); PostgreSQL
/// writes the starts and self-contained successes in one statement of its own and the rest in
/// a transaction after it (`ServerStore.complete`).
///
/// ```swift
/// let split = CompletionSplit(outcomes, starting: starting) { _, outcome in outcome.isSuccess }
/// let refusedStarts = try StoreSQL.markStarted(db, split.separateStarts, workerID: id)
/// let rest = split.rest(refusedStarts: refusedStarts, written: [])
/// ```
package struct CompletionSplit: Sendable {
    package typealias Completion = (job: ClaimedJob, outcome: AttemptOutcome)

    package let outcomes: [Completion]
    /// Starts written by their job's outcome, by job.
    package let startsWithOutcome: [JobID: ClaimedJob]
    /// Starts written on their own, before any outcome.
    package let separateStarts: [ClaimedJob]

    package init(
        _ outcomes: [Completion], starting: [ClaimedJob],
        goesWithItsStart: (ClaimedJob, AttemptOutcome) -> Bool
    ) {
        self.outcomes = outcomes
        guard !starting.isEmpty, !outcomes.isEmpty else {
            startsWithOutcome = [:]
            separateStarts = starting
            return
        }
        var takingTheirStart: Set<JobID> = []
        for (job, outcome) in outcomes where goesWithItsStart(job, outcome) { takingTheirStart.insert(job.id) }
        var withOutcome: [JobID: ClaimedJob] = [:]
        var separate: [ClaimedJob] = []
        for job in starting {
            if takingTheirStart.contains(job.id) {
                withOutcome[job.id] = job
            } else {
                separate.append(job)
            }
        }
        startsWithOutcome = withOutcome
        separateStarts = separate
    }

    /// What is left to write once the separate starts are written (the fence refused
    /// `refusedStarts` of them) and the outcomes in `written` are: each outcome neither written
    /// nor refused with its start, and the starts that go with those.
    package func rest(refusedStarts: Set<JobID>, written: Set<JobID>) -> (outcomes: [Completion], starts: [ClaimedJob])
    {
        let outcomes = self.outcomes.filter { !written.contains($0.job.id) && !refusedStarts.contains($0.job.id) }
        return (outcomes, outcomes.compactMap { startsWithOutcome[$0.job.id] })
    }

    /// What the worker is told the fence refused: the outcomes refused (`refusedOutcomes`) or
    /// refused with their separate start, and the starts refused (`refusedStarts`) or refused
    /// with their outcome.
    package func refusals(refusedStarts: Set<JobID>, refusedOutcomes: Set<JobID>) -> (
        outcomes: Set<JobID>, starts: Set<JobID>
    ) {
        var outcomeRefusals = refusedOutcomes
        if !refusedStarts.isEmpty {
            outcomeRefusals.formUnion(outcomes.lazy.map(\.job.id).filter { refusedStarts.contains($0) })
        }
        return (outcomeRefusals, refusedStarts.union(refusedOutcomes.lazy.filter { startsWithOutcome[$0] != nil }))
    }
}
