import Foundation
import Testing

/// Tests that load the machine enough to starve the timing-sensitive tests beside them (forty
/// worker processes; a server of their own restarted under workers and producers; copies of
/// 12,000 jobs killed and run again; the bench's drains by up to four worker processes; headless
/// Chromium rendering the dashboard, which took both cores for seconds and failed tests beside it) run alone:
/// `.ci/run` runs them in a second `swift test` with `JOBQ_TEST_RUN_ALONE=1` after the suite
/// passed, one at a time (each name in ``filter``); the suite itself lists them as skipped.
enum RunsAlone {
    static let enabled = ProcessInfo.processInfo.environment["JOBQ_TEST_RUN_ALONE"] == "1"
    /// The tests' names, as `.ci/run` passes them to `swift test --filter`, one at a time.
    static let filter =
        "ConnectionLimitProcessTests|ServerRestartProcessTests|WhileTheServerRestarts|CopyKilledMidway|PgBouncerTests|NothingCompletesTwice|FilterAgreementTests|QueueRowHeldByAnotherSession|BenchOnPostgres|DashboardBrowserTests"

    static var trait: ConditionTrait {
        .enabled(
            if: enabled,
            "runs alone: JOBQ_TEST_RUN_ALONE=1 swift test --filter '\(filter)' (.ci/run does, after the suite)")
    }
}
