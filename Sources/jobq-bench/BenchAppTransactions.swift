import JobQ

extension BenchCommand {
    /// The enqueue in the application's transaction on SQLite (its own GRDB pool on the store's
    /// file) beside the application's transaction alone: one job, its CPU, and 100 jobs in one
    /// transaction. `singleEnqueueCPU`: jobq's own single enqueue's CPU per job (us), measured
    /// by the caller beside its rate; measured here when nil.
    func appTransactionRows(
        _ bench: inout BenchWorkloads, count: Int, singleEnqueueCPU: Measured?, progress: (String) -> Void
    ) async throws -> [Row] {
        progress("enqueue in the application's transaction")
        var appCPU: [Double] = []
        let appOnly = try await measure {
            defer { appCPU.append(bench.lastCPUPerItem) }
            return try await bench.appTransactions(count)
        }
        let appWithRawRow = try await measure { try await bench.appTransactions(count, extra: .jobRowsRaw(1)) }
        var appWithJobCPU: [Double] = []
        let appWithJob = try await measure {
            defer { appWithJobCPU.append(bench.lastCPUPerItem) }
            return try await bench.appTransactions(count, extra: .jobs(1))
        }
        // CPU per job of an enqueue in the application's transaction: the transaction's CPU
        // above the application's own, run for run, in microseconds.
        let enqueueInAppCPU = Measured(zip(appWithJobCPU, appCPU).map { ($0 - $1) * 1e6 })
        var singleCPU = singleEnqueueCPU
        if singleCPU == nil {
            var runs: [Double] = []
            _ = try await measure {
                defer { runs.append(bench.lastCPUPerItem * 1e6) }
                return try await bench.enqueueOneAtATime(count)
            }
            singleCPU = Measured(runs)
        }
        let appRows100 = try await measure { try await bench.appTransactions(count * 10, extra: .rows(100)) }
        let appJobs100 = try await measure { try await bench.appTransactions(count * 10, extra: .jobs(100)) }
        return [
            Row(
                workload: "enqueue in the app's transaction (GRDB: its row + the job)", value: appWithJob,
                unit: "jobs/s", baseline: "the app's transaction, its row only", baselineValue: appOnly,
                ratio: appWithJob / appOnly),
            Row(
                workload: "the app's transaction + a job's row by its own INSERT (SQLite's work alone, no jobq code)",
                value: appWithRawRow, unit: "jobs/s", baseline: "the app's transaction, its row only",
                baselineValue: appOnly, ratio: appWithRawRow / appOnly),
            Row(
                workload: "enqueue in the app's transaction, vs the job's row by the app's own INSERT",
                value: appWithJob, unit: "jobs/s", baseline: "the app's transaction + a job's row by its own INSERT",
                baselineValue: appWithRawRow, ratio: appWithJob / appWithRawRow),
            Row(
                workload: "CPU per job of the enqueue in the app's transaction (above the app's own)",
                value: enqueueInAppCPU, unit: "us/job", baseline: "CPU per job of jobq's own single enqueue",
                baselineValue: singleCPU, ratio: singleCPU.map { enqueueInAppCPU / $0 }),
            Row(
                workload: "enqueue 100 jobs in one app transaction (GRDB: its row + 100 jobs)", value: appJobs100,
                unit: "jobs/s", baseline: "its row + 100 rows of its own", baselineValue: appRows100,
                ratio: appJobs100 / appRows100)
        ]
    }
}
