import ArgumentParser
import Foundation
import JobQ
import JobQCommandLine

struct BenchCommand: AsyncParsableCommand {
    /// A concurrency limit no drain reaches: what counting a limit costs a claim.
    static let neverBinding = 1_000_000

    static let configuration = CommandConfiguration(
        commandName: "jobq-bench",
        abstract:
            "Measure jobq against a minimal raw queue on this machine: enqueue, drain, latency, flat cost, memory.",
        discussion: helpText(
            """
            Every workload runs on a fresh store in the temporary directory. Each figure is also
            printed as a ratio of the raw-SQLite baseline measured in the same run (the same
            statements through the SQLite C API, no jobq code, event rows included), because
            absolute numbers drift on a shared machine and ratios do not. Two reference rows show
            the job statements without event rows. Build with -c release for meaningful numbers.
            --quick shrinks every size, for CI.
            """))

    @Flag(help: "Small sizes, to check that the bench works (CI).")
    var quick = false

    @Flag(help: "Print one JSON object instead of a table.")
    var json = false

    @Flag(help: "Measure with synchronous=FULL (what --durable costs), jobq and baseline alike.")
    var durable = false

    @Flag(
        help:
            "Instead of the workloads: what each of jobq's promises costs SQLite (jobq's statements run raw without the event rows, without the result, without each index a job passes through), beside the minimal raw queue and jobq itself."
    )
    var breakdown = false

    @Flag(
        help:
            "Instead of the workloads: only pick-up across processes, jobq's (enqueue to done in the worker) beside the minimal raw queue's one way, p50 and p99 (a quick look at the wake-up path)."
    )
    var pickUpOnly = false

    @Flag(
        help:
            "Instead of the workloads: only the enqueues in the application's transaction beside the application's transaction alone (one job, 100 jobs; SQLite, or PostgreSQL with --db)."
    )
    var appTransactionsOnly = false

    @Option(
        help: ArgumentHelp(
            "A PostgreSQL database to bench (postgres://...) instead of scratch SQLite files.",
            discussion:
                "It must hold no jobs: the bench fills and empties it. Needs a jobq built with --traits Postgres.",
            valueName: "url"))
    var db: String?

    @Option(
        help: ArgumentHelp(
            "With --db: also measure PostgreSQL through a relay that adds this round trip, in milliseconds (0 skips it).",
            valueName: "ms"))
    var roundTripMs: Double = 1

    @Option(
        help: ArgumentHelp(
            "With --db: also drain and pick up through this pooler's URL to the same database (PgBouncer in transaction mode; add prepare=off before PgBouncer 1.21).",
            valueName: "url"))
    var pooler: String?

    /// The minimal raw queue's worker, run by the bench itself in a child process.
    @Option(help: .hidden) var minimalRawWorker: String?

    @Option(
        help: ArgumentHelp(
            "The jobq binary the cross-process workloads run as workers.",
            discussion: "Default: the `jobq` next to this jobq-bench, built with the same traits.",
            valueName: "path"))
    var jobq: String?

    @Option(help: "Jobs for the one-at-a-time enqueue.") var enqueueJobs: Int?
    @Option(help: "Jobs for the bulk enqueue.") var bulkJobs: Int?
    @Option(help: "Jobs per drain.") var drainJobs: Int?
    @Option(help: "Jobs timed for latency, per setting.") var latencyJobs: Int?
    @Option(help: "Seconds an idle worker's CPU use is measured over.") var idleSeconds: Int?
    @Option(help: "Finished jobs in the store for the flat-cost workload.") var finishedJobs: Int?
    @Option(help: "Future (scheduled) jobs in the store for the flat-cost workload.") var futureJobs: Int?
    @Option(help: "Ready jobs in the store for the memory workload.") var memoryBacklog: Int?
    @Option(help: "Jobs the memory workload's worker runs before it exits.") var memoryJobs: Int?
    @Option(help: "Members of the parallel group workload.") var groupMembers: Int?
    @Option(help: "Steps of the sequence workload.") var sequenceSteps: Int?
    @Option(help: "Fan-out of each level of the tree workload (1 -> n -> n*n jobs).") var treeFanOut: Int?

    struct Row: Codable {
        var workload: String
        var value: Double
        var unit: String
        var baseline: String?
        var baselineValue: Double?
        var ratio: Double?
        /// For a figure measured several times (``Measured``): the spread of the value and of
        /// its baseline.
        var spread: Double? = nil
        var baselineSpread: Double? = nil
    }

    /// Pick-up latencies (ms) beside the cleaner deleting finished jobs, and on the same kind of
    /// store without it; whether the cleaner was still deleting at the last sample.
    struct CleanerLatency {
        var cleaning: [Double]
        var quiet: [Double]
        var overlapped: Bool

        /// The p99 row: `workload` names the latency, the number of jobs deleted is appended.
        func row(_ workload: String, finished: Int) -> Row {
            let note = overlapped ? "" : " (the cleaner finished before the last sample)"
            let (cleaningP99, quietP99) = (percentile(cleaning, 99), percentile(quiet, 99))
            return Row(
                workload: "\(workload) p99 beside the cleaner deleting \(finished) finished jobs\(note)",
                value: cleaningP99, unit: "ms", baseline: "the same store, worker without the cleaner (p99)",
                baselineValue: quietP99, ratio: cleaningP99 / quietP99)
        }
    }

    /// A drain under limits against the same drain without them.
    static func limitedDrainRow(_ workload: String, _ rate: Measured, unlimited: Measured) -> Row {
        Row(
            workload: workload, value: rate, unit: "jobs/s", baseline: "the same drain without a limit",
            baselineValue: unlimited, ratio: rate / unlimited)
    }

    func size(_ given: Int?, _ normal: Int, _ small: Int) throws -> Int {
        let value = given ?? (quick ? small : normal)
        guard value >= 1 else { throw CLIError.usage("bench sizes must be at least 1, got \(value)") }
        return value
    }

    func run() async throws {
        if let jobq { BenchChild.jobqOverride.withLock { $0 = jobq } }
        if let minimalRawWorker {
            #if os(Linux)
                try MinimalRawLatency.runWorker(path: minimalRawWorker, count: try size(latencyJobs, 200, 30))
                return
            #else
                throw CLIError.usage("--minimal-raw-worker needs Linux (inotify)")
            #endif
        }
        // Find the worker binary before measuring anything.
        _ = try BenchChild.executable(.jobq)
        if let db {
            guard case .postgres(let url) = StoreLocation(db) else {
                throw CLIError.usage(
                    "--db: the bench takes a PostgreSQL URL (postgres://...); on SQLite it uses scratch files of its own"
                )
            }
            #if Postgres
                try output(try await postgresBench(url: url))
                return
            #else
                throw StoreLocation.withoutPostgres(url)
            #endif
        }
        let enqueueCount = try size(enqueueJobs, 40_000, 300)
        let bulkCount = try size(bulkJobs, 200_000, 5_000)
        let drainCount = try size(drainJobs, 150_000, 1_000)
        let latencyCount = try size(latencyJobs, 200, 30)
        let idleFor = try size(idleSeconds, 20, 2)
        let finished = try size(finishedJobs, 1_000_000, 20_000)
        let future = try size(futureJobs, 100_000, 2_000)
        let backlog = try size(memoryBacklog, 1_000_000, 20_000)
        let memoryRun = try size(memoryJobs, 30_000, 1_000)
        let members = try size(groupMembers, 10_000, 1_000)
        let sequence = try size(sequenceSteps, 1_000, 100)
        let fanOut = try size(treeFanOut, 100, 30)
        let treeJobs = 1 + fanOut + fanOut * fanOut
        let functionCount = try size(nil, 2_000, 100)
        let sleepers = try size(nil, 10_000, 500)
        var bench = try BenchWorkloads()
        bench.durability = durable ? .full : .normal
        defer { bench.cleanUp() }
        func progress(_ text: String) {
            if !json { FileHandle.standardError.write(Data("bench: \(text)...\n".utf8)) }
        }
        if breakdown {
            let rows = try await costBreakdown(&bench, inserts: enqueueCount, drain: drainCount, progress: progress)
            try output(rows)
            return
        }
        if appTransactionsOnly {
            try output(
                try await appTransactionRows(&bench, count: enqueueCount, singleEnqueueCPU: nil, progress: progress))
            return
        }
        if pickUpOnly {
            #if os(Linux)
                progress("latency across processes, jobq and the minimal raw queue")
                let jobq = try await bench.latency(latencyCount, crossProcess: true).pickedUpAndDone
                let raw = try await MinimalRawLatency.measure(path: bench.freshPath(), count: latencyCount).oneWay
                let limit = "the minimal raw queue one way across processes"
                try output([
                    Row(workload: "enqueue to done in the worker, p50", value: percentile(jobq, 50), unit: "ms"),
                    Row(workload: "enqueue to done in the worker, p99", value: percentile(jobq, 99), unit: "ms"),
                    Row(workload: "\(limit), p50", value: percentile(raw, 50), unit: "ms"),
                    Row(workload: "\(limit), p99", value: percentile(raw, 99), unit: "ms")
                ])
                return
            #else
                throw CLIError.usage("--pick-up-only needs Linux (the minimal raw queue's wake-up uses inotify)")
            #endif
        }

        // Each jobq figure is measured right after its raw baseline, so that the machine's drift
        // between the two is as small as it can be.
        progress("enqueue, and its raw baseline")
        let rawSingle = try await measure { try bench.raw(inserts: enqueueCount, insertBatch: 1) }
        var singleCPU: [Double] = []
        let single = try await measure {
            defer { singleCPU.append(bench.lastCPUPerItem) }
            return try await bench.enqueueOneAtATime(enqueueCount)
        }
        #if Dashboard
            progress("enqueue through the HTTP API")
            let apiCount = min(enqueueCount, 10_000)
            let throughAPI = try await measure { try await bench.enqueueThroughAPI(apiCount) }
        #endif
        let appRows = try await appTransactionRows(
            &bench, count: enqueueCount, singleEnqueueCPU: Measured(singleCPU.map { $0 * 1e6 }), progress: progress)
        let rawBulk = try await measure { try bench.raw(inserts: bulkCount, insertBatch: 1000) }
        let bulk = try await measure { try await bench.enqueueInBulk(bulkCount) }
        progress("raw claim+complete")
        let rawCycle1 = try await measure { try bench.raw(claimComplete: min(drainCount, 20_000), batch: 1) }
        // For reference: the job statements alone, without jobq's event rows.
        let bareSingle = try await measure { try bench.raw(inserts: enqueueCount, insertBatch: 1, events: false) }
        let bareCycle100 = try await measure { try bench.raw(claimComplete: drainCount, batch: 100, events: false) }
        let rawCycle100 = try await measure { try bench.raw(claimComplete: drainCount, batch: 100) }
        progress("the minimal raw queue (one table, one index)")
        var minimalDrainCPU: [Double] = []
        let minimalRuns = try await repeated {
            defer { minimalDrainCPU.append(bench.lastCPUPerItem * 1e6) }
            return try bench.minimalRaw(inserts: enqueueCount, drain: drainCount)
        }
        let minimalInserts = minimalRuns.measured(\.insertsPerSecond)
        let minimalDrain = minimalRuns.measured(\.drainedPerSecond)
        progress("drain in-process")
        var drain1CPU: [Double] = []
        let drain1 = try await measure {
            defer { drain1CPU.append(bench.lastCPUPerItem * 1e6) }
            return try await bench.drainInProcess(drainCount, concurrency: 1)
        }
        var drain4CPU: [Double] = []
        let drain4 = try await measure {
            defer { drain4CPU.append(bench.lastCPUPerItem * 1e6) }
            return try await bench.drainInProcess(drainCount, concurrency: 4)
        }
        var drain4BareCPU: [Double] = []
        let drain4Bare = try await measure {
            defer { drain4BareCPU.append(bench.lastCPUPerItem * 1e6) }
            return try await bench.drainInProcess(drainCount, concurrency: 4, history: false)
        }
        progress("drain through `jobq work`")
        var drainProcessCPU: [Double] = []
        let drainProcess = try await measure {
            defer { drainProcessCPU.append(bench.lastCPUPerItem * 1e6) }
            return try await bench.drainThroughWorkerProcess(drainCount)
        }
        progress("drain through `jobq work` under a concurrency limit that never binds")
        let drainLimited = try await measure {
            try await bench.drainThroughWorkerProcess(drainCount, limits: QueueLimits(concurrency: Self.neverBinding))
        }
        progress("drain through `jobq work` limited to 5 at once per partition, over 1,000 partitions")
        let drainPartitioned = try await measure {
            try await bench.drainThroughWorkerProcess(
                drainCount, limits: BenchWorkloads.partitionedLimits, partitions: 1000)
        }
        progress("workflows: a parallel group of \(members), a sequence of \(sequence)")
        let plainForGroup = try await measure { try await bench.drainInProcess(members, concurrency: 4) }
        let group = try await measure { try await bench.drainParallelGroup(members: members) }
        let steps = try await measure { try await bench.runSequence(steps: sequence) }
        progress("a tree of 1 -> \(fanOut) -> \(fanOut * fanOut) jobs")
        let plainForTree = try await measure { try await bench.drainInProcess(treeJobs, concurrency: 4) }
        let treeRuns = try await repeated { try await bench.runTree(fanOut: fanOut) }
        let tree = treeRuns.measured(\.jobsPerSecond)
        let lastLeaf = treeRuns.measured(\.lastLeafToTreeEvent)
        progress("durable functions: \(functionCount) of 10 steps, and \(functionCount * 10) plain jobs")
        let plainForFunctions = try await measure {
            try await BenchWorkloads.drainPlain(try bench.open(bench.freshPath()), jobs: functionCount * 10)
        }
        let functionSteps = try await measure {
            try await BenchWorkloads.runFunctions(
                try bench.open(bench.freshPath()), functions: functionCount, steps: 10)
        }
        progress("a signal to its function's success")
        let signalled = try await BenchWorkloads.signalLatency(try bench.open(bench.freshPath()), count: latencyCount)
        progress("latency")
        let inProcess = try await bench.latency(latencyCount, crossProcess: false)
        let crossProcess = try await bench.latency(latencyCount, crossProcess: true)
        progress("latency across processes beside the cleaner deleting \(finished) finished jobs")
        let besideCleaner = try await bench.latencyBesideCleaner(latencyCount, finished: finished)
        let bulkDead = finished / 10
        progress("latency across processes beside a bulk retry of \(bulkDead) dead jobs")
        let besideBulk = try await bench.latencyBesideBulkRetry(latencyCount, dead: bulkDead)
        let searched = finished / 5
        progress("a count by payload member among \(searched) jobs, without and with its index")
        let byPayload = try await bench.findByPayloadMember(jobs: searched)
        progress("a day of history among \(finished) finished jobs")
        let dayOfHistory = try await bench.readDayOfHistory(jobs: finished, queues: 5)
        #if os(Linux)
            progress("latency of the minimal raw queue across processes")
            let rawLatency: MinimalRawLatency.Samples? = try await MinimalRawLatency.measure(
                path: bench.freshPath(), count: latencyCount)
        #else
            let rawLatency: MinimalRawLatency.Samples? = nil
        #endif
        progress("an idle worker's CPU over \(idleFor)s")
        let idle = try await bench.idleWorker(seconds: idleFor)
        let idleCPU = idle?.cpu
        progress("an idle worker's CPU and memory beside \(sleepers) sleeping durable functions")
        let idleBesideSleepers = try await bench.idleWorker(seconds: idleFor, sleepingFunctions: sleepers)
        progress("flat cost with \(finished) finished and \(future) future jobs")
        let flat = try await bench.flatCost(finished: finished, future: future, drain: drainCount)
        progress("peak memory with a \(backlog)-job backlog")
        let peak = try await bench.peakMemory(backlog: backlog, jobs: memoryRun)

        let batchedCycle = "raw claim+complete, batches of 100"
        var rows = [
            Row(
                workload: "enqueue, one per transaction", value: single, unit: "jobs/s",
                baseline: "raw single-insert commits", baselineValue: rawSingle, ratio: single / rawSingle),
            Row(
                workload: "enqueue, bulk (batches of 1,000)", value: bulk, unit: "jobs/s",
                baseline: "raw inserts, batches of 1,000", baselineValue: rawBulk, ratio: bulk / rawBulk),
            Row(
                workload: "drain in-process, concurrency 1", value: drain1, unit: "jobs/s",
                baseline: batchedCycle, baselineValue: rawCycle100, ratio: drain1 / rawCycle100),
            Row(
                workload: "drain in-process, concurrency 4", value: drain4, unit: "jobs/s",
                baseline: batchedCycle, baselineValue: rawCycle100, ratio: drain4 / rawCycle100),
            Row(
                workload: "drain in-process, concurrency 4, recording the history", value: drain4, unit: "jobs/s",
                baseline: "the same drain recording none (historyInterval nil)", baselineValue: drain4Bare,
                ratio: drain4 / drain4Bare),
            Row(
                workload: "drain through `jobq work` (concurrency 4)", value: drainProcess, unit: "jobs/s",
                baseline: batchedCycle, baselineValue: rawCycle100, ratio: drainProcess / rawCycle100),
            Self.limitedDrainRow(
                "drain through `jobq work`, queue limited to \(Self.neverBinding) at once (never binds)", drainLimited,
                unlimited: drainProcess),
            Self.limitedDrainRow(
                "drain through `jobq work`, 5 at once per partition of 1,000 (payload member /c)", drainPartitioned,
                unlimited: drainProcess),
            Row(
                workload: "drain a parallel group of \(members) steps (concurrency 4)", value: group, unit: "steps/s",
                baseline: "plain drain of \(members) jobs, concurrency 4", baselineValue: plainForGroup,
                ratio: group / plainForGroup),
            Row(
                workload: "a sequence of \(sequence) steps, one hand-off each", value: steps, unit: "steps/s",
                baseline: "raw claim+complete, one job per transaction", baselineValue: rawCycle1,
                ratio: steps / rawCycle1),
            Row(
                workload: "a tree of 1 -> \(fanOut) -> \(fanOut * fanOut) jobs, end to end (concurrency 4)",
                value: tree,
                unit: "jobs/s", baseline: "plain drain of \(treeJobs) jobs, concurrency 4", baselineValue: plainForTree,
                ratio: tree / plainForTree),
            Row(workload: "the tree's last leaf to its tree event", value: lastLeaf, unit: "ms"),
            Row(workload: "raw claim+complete, one job per transaction", value: rawCycle1, unit: "jobs/s"),
            Row(
                workload: "raw single-insert commits, no event rows", value: bareSingle, unit: "jobs/s",
                baseline: "raw single-insert commits", baselineValue: rawSingle, ratio: bareSingle / rawSingle),
            Row(
                workload: "raw claim+complete, batches of 100, no event rows", value: bareCycle100, unit: "jobs/s",
                baseline: batchedCycle, baselineValue: rawCycle100, ratio: bareCycle100 / rawCycle100)
        ]
        rows.insert(contentsOf: appRows, at: 1)
        #if Dashboard
            rows.append(
                Row(
                    workload: "enqueue through the HTTP API, one job per POST (keep-alive, loopback)",
                    value: throughAPI,
                    unit: "jobs/s", baseline: "enqueue, one per transaction, in-process", baselineValue: single,
                    ratio: throughAPI / single))
        #endif
        // The physical limit: every jobq figure against the smallest queue SQLite can be here.
        let limit = "minimal raw queue"
        rows += [
            Row(workload: "minimal raw queue: single-insert commits", value: minimalInserts, unit: "jobs/s"),
            Row(
                workload: "minimal raw queue: claim+complete, batches of 100", value: minimalDrain,
                unit: "jobs/s"),
            Row(
                workload: "enqueue, one per transaction, vs the \(limit)", value: single, unit: "jobs/s",
                baseline: "\(limit) single inserts", baselineValue: minimalInserts,
                ratio: single / minimalInserts),
            Row(
                workload: "drain in-process, concurrency 1, vs the \(limit)", value: drain1, unit: "jobs/s",
                baseline: "\(limit) claim+complete", baselineValue: minimalDrain,
                ratio: drain1 / minimalDrain),
            Row(
                workload: "drain in-process, concurrency 4, vs the \(limit)", value: drain4, unit: "jobs/s",
                baseline: "\(limit) claim+complete", baselineValue: minimalDrain,
                ratio: drain4 / minimalDrain),
            Row(
                workload: "drain through `jobq work`, vs the \(limit)", value: drainProcess, unit: "jobs/s",
                baseline: "\(limit) claim+complete", baselineValue: minimalDrain,
                ratio: drainProcess / minimalDrain)
        ]
        // CPU per job (user + system over jobs): the drains' own cost, whatever the machine's
        // noise does to their rates. The ratio is the minimal queue's CPU over jobq's (higher
        // is better, as for the rates).
        let minimalCPU = Measured(minimalDrainCPU)
        rows += [
            ("drain in-process, concurrency 1 (this process)", Measured(drain1CPU)),
            ("drain in-process, concurrency 4 (this process)", Measured(drain4CPU)),
            ("drain in-process, concurrency 4, recording no history (this process)", Measured(drain4BareCPU)),
            ("drain through `jobq work` (the worker process, start-up included)", Measured(drainProcessCPU))
        ].map { workload, cpu in
            Row(
                workload: "CPU per job: \(workload)", value: cpu, unit: "us/job",
                baseline: "\(limit) claim+complete, CPU per job", baselineValue: minimalCPU, ratio: minimalCPU / cpu)
        }
        rows += [
            Row(workload: "latency in-process p50", value: percentile(inProcess.roundTrip, 50), unit: "ms"),
            Row(workload: "latency in-process p99", value: percentile(inProcess.roundTrip, 99), unit: "ms"),
            Row(workload: "latency across processes p50", value: percentile(crossProcess.roundTrip, 50), unit: "ms"),
            Row(workload: "latency across processes p99", value: percentile(crossProcess.roundTrip, 99), unit: "ms"),
            besideCleaner.row("latency across processes", finished: finished),
            Row(
                workload: "latency across processes p99 beside `jobq retry --where` of \(bulkDead) dead jobs"
                    + (besideBulk.overlapped ? "" : " (the retry finished before the last sample)"),
                value: percentile(besideBulk.during, 99), unit: "ms", baseline: "the same store, no bulk action (p99)",
                baselineValue: percentile(besideBulk.quiet, 99),
                ratio: percentile(besideBulk.during, 99) / percentile(besideBulk.quiet, 99)),
            Row(
                workload: "bulk retry beside a worker, `jobq retry --where` start to exit",
                value: besideBulk.retriedPerSecond, unit: "jobs/s"),
            Row(
                workload: "count by payload member (/customer, 1 in 1,000 of \(searched) jobs), with its index",
                value: byPayload.withIndex, unit: "ms", baseline: "the same count without the index",
                baselineValue: byPayload.withoutIndex, ratio: byPayload.withIndex / byPayload.withoutIndex),
            Row(
                workload:
                    "history: a day in 96 buckets (the dashboard's 24h charts), 5 queues x 3 executors, among \(finished) finished jobs",
                value: dayOfHistory, unit: "ms"),
            Row(
                workload: "latency across processes, enqueue to done in the worker, p50",
                value: percentile(crossProcess.pickedUpAndDone, 50), unit: "ms"),
            Row(
                workload: "latency across processes, enqueue to done in the worker, p99",
                value: percentile(crossProcess.pickedUpAndDone, 99), unit: "ms")
        ]
        if let rawLatency {
            // The latency limit: the minimal raw queue across two processes. Its ratio is the
            // limit's time over jobq's, so 1 means jobq is at the limit, as above.
            let trip = "\(limit) round trip across processes"
            let oneWay = "\(limit) one way across processes"
            let (limitTrip, limitOneWay) = (percentile(rawLatency.roundTrip, 50), percentile(rawLatency.oneWay, 50))
            let (jobqTrip, jobqOneWay) = (
                percentile(crossProcess.roundTrip, 50), percentile(crossProcess.pickedUpAndDone, 50)
            )
            rows += [
                Row(workload: "\(trip), p50", value: limitTrip, unit: "ms"),
                Row(workload: "\(trip), p99", value: percentile(rawLatency.roundTrip, 99), unit: "ms"),
                Row(workload: "\(oneWay), p50", value: limitOneWay, unit: "ms"),
                Row(
                    workload: "latency across processes p50, vs the \(limit)", value: jobqTrip, unit: "ms",
                    baseline: "\(trip) p50", baselineValue: limitTrip, ratio: limitTrip / jobqTrip),
                Row(
                    workload: "enqueue to done in the worker p50, vs the \(limit)", value: jobqOneWay, unit: "ms",
                    baseline: "\(oneWay) p50", baselineValue: limitOneWay, ratio: limitOneWay / jobqOneWay)
            ]
        }
        rows += [
            Row(
                workload: "durable functions of 10 steps (\(functionCount), concurrency 4)", value: functionSteps,
                unit: "steps/s", baseline: "plain drain of \(functionCount * 10) jobs, concurrency 4",
                baselineValue: plainForFunctions, ratio: functionSteps / plainForFunctions),
            Row(
                workload: "a signal to its parked function's success p50", value: percentile(signalled.toSuccess, 50),
                unit: "ms", baseline: "latency in-process p50", baselineValue: percentile(inProcess.roundTrip, 50),
                ratio: percentile(inProcess.roundTrip, 50) / percentile(signalled.toSuccess, 50)),
            Row(
                workload: "a signal sent to its function taking it p50", value: percentile(signalled.toTake, 50),
                unit: "ms", baseline: "latency in-process p50", baselineValue: percentile(inProcess.roundTrip, 50),
                ratio: percentile(inProcess.roundTrip, 50) / percentile(signalled.toTake, 50))
        ]
        if let idle, let besideSleepers = idleBesideSleepers {
            rows += [
                Row(
                    workload: "CPU of an idle `jobq work` beside \(sleepers) sleeping functions",
                    value: besideSleepers.cpu, unit: "% of a core", baseline: "with none", baselineValue: idle.cpu),
                Row(
                    workload: "peak memory of an idle `jobq work` beside \(sleepers) sleeping functions",
                    value: Double(besideSleepers.rss) / 1_048_576, unit: "MiB", baseline: "with none",
                    baselineValue: Double(idle.rss) / 1_048_576,
                    ratio: Double(besideSleepers.rss) / Double(max(idle.rss, 1)))
            ]
        }
        if let idleCPU {
            rows.append(
                Row(workload: "CPU of an idle `jobq work` over \(idleFor)s", value: idleCPU, unit: "% of a core"))
        } else {
            FileHandle.standardError.write(Data("bench: an idle worker's CPU is not measured here (no /proc)\n".utf8))
        }
        rows += [
            Row(
                workload: "claim throughput, \(finished) finished + \(future) future jobs", value: flat.full,
                unit: "jobs/s",
                baseline: "the same on an empty store", baselineValue: flat.empty, ratio: flat.full / flat.empty),
            Row(workload: "peak RSS of a worker, \(backlog)-job backlog", value: Double(peak) / 1_048_576, unit: "MiB")
        ]
        try output(rows)
    }

    private func output(_ rows: [Row]) throws {
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            encoder.nonConformingFloatEncodingStrategy = .convertToString(
                positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
            print(String(decoding: try encoder.encode(["results": rows]), as: UTF8.self))
            return
        }
        // A figure measured several times shows its median and spread: "67096 jobs/s ±4%".
        func spread(_ value: Double?) -> String { value.map { String(format: " ±%.0f%%", $0 * 100) } ?? "" }
        var table = [["WORKLOAD", "JOBQ", "BASELINE", "RATIO"]]
        for row in rows {
            let fractional = ["ms", "MiB", "% of a core"].contains(row.unit)
            let value = String(format: fractional ? "%.2f %@" : "%.0f %@", row.value, row.unit) + spread(row.spread)
            let baseline =
                row.baselineValue.map {
                    String(format: fractional ? "%.2f" : "%.0f", $0) + spread(row.baselineSpread)
                        + " (\(row.baseline ?? ""))"
                } ?? ""
            table.append([row.workload, value, baseline, row.ratio.map { String(format: "%.2f", $0) } ?? ""])
        }
        print(Table.render(table))
        if rows.contains(where: { $0.spread != nil }) {
            print("Figures with ± are the median of \(runs) runs, ± their spread ((max - min) / median).")
        }
    }
}
