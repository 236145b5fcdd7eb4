import Foundation

/// What ``JobQueue/perform(_:where:through:progress:)`` does to each job a filter matches: exactly what
/// the one-job action does (``JobQueue/retry(_:)``, ``JobQueue/cancel(_:)``,
/// ``JobQueue/delete(_:)``), with the same checks and events.
public enum BulkAction: String, Sendable, Hashable, CaseIterable, Codable {
    /// Failed, dead and cancelled jobs run again now.
    case retry
    /// Jobs that have not finished are cancelled.
    case cancel
    /// Finished jobs are deleted with their events.
    case delete
}

/// What a bulk action did, so far or in the end.
///
/// ```swift
/// let report = try await queue.perform(.retry, where: JobFilter("state:dead executor:mail"))
/// print("\(report.changed) retried, \(report.skipped) skipped: \(report.skippedByReason)")
/// ```
public struct BulkActionReport: Sendable, Hashable {
    public var action: BulkAction
    /// The filter's expression.
    public var filter: String
    /// Jobs the filter matched when the action reached them.
    public var matched: Int
    /// Jobs the action changed (retried, cancelled or deleted).
    public var changed: Int
    /// Matched jobs the one-job action refuses (a running job is not deleted, a succeeded one
    /// not retried), counted by a short reason: `"running": 3`.
    public var skippedByReason: [String: Int]
    /// One refusal's full message per reason, saying what to do.
    public var exampleRefusals: [String: String]

    /// Every skipped job.
    public var skipped: Int { skippedByReason.values.reduce(0, +) }

    package init(action: BulkAction, filter: String) {
        self.action = action
        self.filter = filter
        self.matched = 0
        self.changed = 0
        self.skippedByReason = [:]
        self.exampleRefusals = [:]
    }
}

/// Where a bulk action is: reported after each batch it commits.
public struct BulkActionProgress: Sendable, Hashable {
    /// Jobs the walk has passed, matched or not.
    public var done: Int
    /// Jobs the filter matched when the action started (jobs created after it are left alone).
    public var total: Int
    public var report: BulkActionReport
}
