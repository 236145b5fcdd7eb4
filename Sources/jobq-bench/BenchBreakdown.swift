import Foundation
import JobQ

extension BenchCommand {
    /// `jobq bench --breakdown`: the distance from jobq to the minimal raw queue, taken apart.
    ///
    /// jobq's own statements are run raw (the C API, no jobq code) in full, then without one
    /// promise at a time: the event rows (the feed), the stored result, and each index a job
    /// passes through on its way (jobs_leases while running, jobs_finished once done, events_job
    /// for a job's history). The full raw run is measured first and last, and the variants are
    /// compared with the mean of the two, so that a drifting machine shows as their difference.
    /// jobq itself (single enqueue, drain at concurrency 1) closes the table, as a ratio to the
    /// same raw run: the rest of the distance is jobq's code, not SQLite.
    func costBreakdown(
        _ bench: inout BenchWorkloads, inserts: Int, drain: Int, progress: (String) -> Void
    ) async throws -> [Row] {
        typealias Variant = BenchWorkloads.RawVariant
        let drainVariants: [(String, Variant)] = [
            ("without event rows", Variant(events: false)),
            ("without the stored result", Variant(storesResult: false)),
            ("without the jobs_leases index", Variant(droppedIndexes: ["jobq_jobs_leases"])),
            ("without the jobs_finished index", Variant(droppedIndexes: ["jobq_jobs_finished"])),
            ("without the events_job index", Variant(droppedIndexes: ["jobq_events_job"])),
            (
                "without all five",
                Variant(
                    events: false, storesResult: false,
                    droppedIndexes: ["jobq_jobs_leases", "jobq_jobs_finished", "jobq_events_job"])
            )
        ]
        let insertVariants: [(String, Variant)] = [
            ("without the enqueued event (its data in the job row)", Variant(events: false))
        ]
        progress("jobq's statements raw, in full")
        let fullInsertsBefore = try bench.raw(inserts: inserts, variant: Variant())
        let fullDrainBefore = try bench.raw(claimComplete: drain, batch: 100, variant: Variant())
        var measured: [(String, Double, Bool)] = []
        for (name, variant) in insertVariants {
            progress("single inserts \(name)")
            measured.append((name, try bench.raw(inserts: inserts, variant: variant), true))
        }
        for (name, variant) in drainVariants {
            progress("claim+complete \(name)")
            measured.append((name, try bench.raw(claimComplete: drain, batch: 100, variant: variant), false))
        }
        progress("jobq's statements raw, in full, again")
        let fullInserts = (fullInsertsBefore + (try bench.raw(inserts: inserts, variant: Variant()))) / 2
        let fullDrain = (fullDrainBefore + (try bench.raw(claimComplete: drain, batch: 100, variant: Variant()))) / 2
        progress("the minimal raw queue")
        let minimal = try bench.minimalRaw(inserts: inserts, drain: drain)
        progress("jobq")
        let single = try await bench.enqueueOneAtATime(inserts)
        let drained = try await bench.drainInProcess(drain, concurrency: 1)

        let rawInserts = "jobq's statements raw, single-insert commits"
        let rawDrain = "jobq's statements raw, claim+complete in batches of 100"
        var rows = [
            Row(workload: "minimal raw queue: single-insert commits", value: minimal.insertsPerSecond, unit: "jobs/s"),
            Row(
                workload: rawInserts, value: fullInserts, unit: "jobs/s",
                baseline: "minimal raw queue", baselineValue: minimal.insertsPerSecond,
                ratio: fullInserts / minimal.insertsPerSecond)
        ]
        for (name, value, isInsert) in measured where isInsert {
            rows.append(
                Row(
                    workload: "  \(name)", value: value, unit: "jobs/s", baseline: "in full",
                    baselineValue: fullInserts, ratio: value / fullInserts))
        }
        rows += [
            Row(
                workload: "jobq: enqueue, one per transaction", value: single, unit: "jobs/s",
                baseline: "jobq's statements raw", baselineValue: fullInserts, ratio: single / fullInserts),
            Row(
                workload: "minimal raw queue: claim+complete, batches of 100", value: minimal.drainedPerSecond,
                unit: "jobs/s"),
            Row(
                workload: rawDrain, value: fullDrain, unit: "jobs/s",
                baseline: "minimal raw queue", baselineValue: minimal.drainedPerSecond,
                ratio: fullDrain / minimal.drainedPerSecond)
        ]
        for (name, value, isInsert) in measured where !isInsert {
            rows.append(
                Row(
                    workload: "  \(name)", value: value, unit: "jobs/s", baseline: "in full", baselineValue: fullDrain,
                    ratio: value / fullDrain))
        }
        rows.append(
            Row(
                workload: "jobq: drain in-process, concurrency 1", value: drained, unit: "jobs/s",
                baseline: "jobq's statements raw", baselineValue: fullDrain, ratio: drained / fullDrain))
        return rows
    }
}
