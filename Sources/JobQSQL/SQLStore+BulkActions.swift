import Foundation
import JobQCore

extension SQLStore {
    package func perform(
        _ action: BulkAction, on ids: [JobID], where filter: JobFilter, into report: BulkActionReport
    ) async throws -> BulkActionReport {
        guard !ids.isEmpty else { return report }
        let now = StoreSQL.now()
        return try await write { db in
            var report = report
            // The ids were read outside this transaction: only those the filter still matches
            // are acted on (a job retried and finished since is not the job that was meant).
            var (condition, arguments) = FilterSQL.condition(filter, db.dialect, now: now)
            arguments.append(StoreSQL.jsonArray(ids))
            let matching = try db.fetchRowsOnce(
                sql: "SELECT id FROM jobq_jobs WHERE \(condition) AND \(db.dialect.integer("id", in: "?")) ORDER BY id",
                arguments: arguments
            ).compactMap { $0.values.first.flatMap(Int64.from) }
            for id in matching {
                report.matched += 1
                switch try StoreSQL.act(action, on: id, db, now: now) {
                case .success: report.changed += 1
                case .failure(let refusal):
                    report.skippedByReason[refusal.reason, default: 0] += 1
                    if report.exampleRefusals[refusal.reason] == nil {
                        report.exampleRefusals[refusal.reason] = refusal.message
                    }
                }
            }
            return report
        }
    }

    package func recordBulkAction(_ report: BulkActionReport) async throws {
        let now = StoreSQL.now()
        try await write(.short) { db in
            StoreSQL.appendEvent(
                db,
                .bulk(
                    action: report.action.rawValue, filter: report.filter, matched: report.matched,
                    changed: report.changed, skipped: report.skippedByReason),
                job: nil, queue: nil, executor: nil, batch: nil, now: now)
        }
    }
}
