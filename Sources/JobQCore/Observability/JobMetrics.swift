import CoreMetrics
import Synchronization

/// jobq's metrics, emitted through swift-metrics to whatever backend the process bootstrapped
/// (`MetricsSystem.bootstrap`). Names follow Prometheus conventions, so a Prometheus backend
/// (swift-prometheus, or `jobq work --metrics-listen`) exports them as they are:
///
/// | name | type | labels | what |
/// |---|---|---|---|
/// | `jobq_jobs_enqueued_total` | counter | queue, executor | jobs this process stored with `enqueue` |
/// | `jobq_jobs_started_total` | counter | queue, executor | attempts started by this process's pools |
/// | `jobq_jobs_completed_total` | counter | queue, executor, outcome | attempts whose outcome was recorded: `succeeded`, `retried`, `dead`, `snoozed`, `released`, `discarded` (cancelled or taken over while running) |
/// | `jobq_jobs_failed_total` | counter | queue, executor, reason | failed attempts (retried or dead): `error` or `timeout` |
/// | `jobq_job_duration_seconds` | histogram | queue, executor | how long executors ran |
/// | `jobq_job_queue_wait_seconds` | histogram | queue, executor | from when a job could run (enqueued, due, or retry time) to its start |
/// | `jobq_jobs_running` | gauge | queue, executor | attempts running now in this process |
/// | `jobq_queue_jobs` | gauge | queue, state | jobs in the store per queue and state, read by each pool every ``WorkerPool/Options/backlogMetricsInterval`` |
///
/// With no backend bootstrapped (swift-metrics' default), none of this runs: the handles are
/// made only once a real factory is in place, so an unobserved pool pays one check per job.
///
/// ```swift
/// MetricsSystem.bootstrap(PrometheusMetricsFactory())   // before the pool starts
/// let pool = WorkerPool(queue: queue, executors: [Sum()])
/// ```
final class JobMetrics: Sendable {
    /// One label set of per-executor metrics.
    private struct Key: Hashable {
        let queue: String
        let executor: String
    }

    /// The handles of one queue and executor, made on first use.
    private final class Handles: Sendable {
        let enqueued: Counter
        let started: Counter
        let duration: Timer
        let wait: Timer
        let running: Meter
        let completed: [Outcome: Counter]
        let failedByError: Counter
        let failedByTimeout: Counter

        init(_ key: Key, factory: any MetricsFactory) {
            let labels = [("queue", key.queue), ("executor", key.executor)]
            enqueued = Counter(label: "jobq_jobs_enqueued_total", dimensions: labels, factory: factory)
            started = Counter(label: "jobq_jobs_started_total", dimensions: labels, factory: factory)
            duration = Timer(label: "jobq_job_duration_seconds", dimensions: labels, factory: factory)
            wait = Timer(label: "jobq_job_queue_wait_seconds", dimensions: labels, factory: factory)
            running = Meter(label: "jobq_jobs_running", dimensions: labels, factory: factory)
            completed = Dictionary(
                uniqueKeysWithValues: Outcome.allCases.map { outcome in
                    (
                        outcome,
                        Counter(
                            label: "jobq_jobs_completed_total", dimensions: labels + [("outcome", outcome.rawValue)],
                            factory: factory)
                    )
                })
            failedByError = Counter(
                label: "jobq_jobs_failed_total", dimensions: labels + [("reason", "error")], factory: factory)
            failedByTimeout = Counter(
                label: "jobq_jobs_failed_total", dimensions: labels + [("reason", "timeout")], factory: factory)
        }
    }

    /// The `outcome` label of `jobq_jobs_completed_total` (and of attempt spans).
    enum Outcome: String, CaseIterable {
        case succeeded, retried, dead, snoozed, parked, released, cancelled, discarded

        /// What an attempt came to; nil is an attempt with nothing to record (cancelled or
        /// taken over while it ran).
        init(_ outcome: AttemptOutcome?) {
            self =
                switch outcome {
                case .succeeded: .succeeded
                case .retry: .retried
                case .dead: .dead
                case .snoozed: .snoozed
                case .parked: .parked
                case .cancelled: .cancelled
                case .released: .released
                case nil: .discarded
                }
        }
    }

    private let factory: any MetricsFactory
    private let handles = Mutex<[Key: Handles]>([:])
    private let backlog = Mutex<[String: Gauge]>([:])

    private init(factory: any MetricsFactory) {
        self.factory = factory
    }

    /// The metrics of the bootstrapped backend, or nil while there is none.
    static func ifBootstrapped() -> JobMetrics? {
        let factory = MetricsSystem.factory
        return factory is NOOPMetricsHandler ? nil : JobMetrics(factory: factory)
    }

    private func handles(queue: String, executor: String) -> Handles {
        let key = Key(queue: queue, executor: executor)
        return handles.withLock { handles in
            if let existing = handles[key] { return existing }
            let made = Handles(key, factory: factory)
            handles[key] = made
            return made
        }
    }

    /// Counts the jobs an enqueue stored (not those whose unique key was held).
    func enqueued(_ outcomes: [Enqueued]) {
        var counts: [Key: Int] = [:]
        for outcome in outcomes where !outcome.existed {
            counts[Key(queue: outcome.job.queue, executor: outcome.job.executor), default: 0] += 1
        }
        for (key, count) in counts {
            handles(queue: key.queue, executor: key.executor).enqueued.increment(by: count)
        }
    }

    /// An attempt starts, `waitSeconds` after it could have.
    func started(queue: String, executor: String, waitSeconds: Double) {
        let handles = handles(queue: queue, executor: executor)
        handles.started.increment()
        handles.wait.recordNanoseconds(Int64(max(0, waitSeconds) * 1e9))
        handles.running.increment()
    }

    /// An executor returned (or was stopped) after `seconds`.
    func ran(queue: String, executor: String, seconds: Double) {
        let handles = handles(queue: queue, executor: executor)
        handles.duration.recordNanoseconds(Int64(max(0, seconds) * 1e9))
        handles.running.decrement()
    }

    /// An attempt's outcome was recorded in the store.
    func completed(queue: String, executor: String, outcome: AttemptOutcome) {
        let handles = handles(queue: queue, executor: executor)
        handles.completed[Outcome(outcome)]?.increment()
        switch outcome {
        case .retry(_, _, let timedOut), .dead(_, let timedOut):
            (timedOut ? handles.failedByTimeout : handles.failedByError).increment()
        case .succeeded, .snoozed, .released, .parked, .cancelled:
            break
        }
    }

    /// An attempt ended without an outcome to record: the job was cancelled or taken over.
    func discarded(queue: String, executor: String) {
        handles(queue: queue, executor: executor).completed[.discarded]?.increment()
    }

    /// Sets `jobq_queue_jobs` from a status read; queues and states absent from it read 0.
    func record(_ status: StoreStatus) {
        backlog.withLock { gauges in
            var seen: Set<String> = []
            for queue in status.queues {
                for (state, count) in queue.counts {
                    let key = queue.name + "\u{0}" + state
                    seen.insert(key)
                    let gauge =
                        gauges[key]
                        ?? {
                            let made = Gauge(
                                label: "jobq_queue_jobs", dimensions: [("queue", queue.name), ("state", state)],
                                factory: factory)
                            gauges[key] = made
                            return made
                        }()
                    gauge.record(count)
                }
            }
            // A queue whose jobs were all pruned leaves the status: its gauges go to 0 rather
            // than keep the last count for ever.
            for (key, gauge) in gauges where !seen.contains(key) { gauge.record(0) }
        }
    }
}
