import CoreMetrics
import Prometheus

/// jobq's metrics (see the JobQ library's metric table) exported in Prometheus text format.
///
/// ``bootstrap()`` installs a swift-prometheus factory as the process's swift-metrics backend,
/// with histogram buckets suited to jobs (1ms to 10 minutes); serve ``text()`` on `/metrics`
/// (``MetricsServer`` does). swift-metrics takes one backend per process: call it once, before
/// the first ``JobQueue`` or ``WorkerPool`` is made, or bootstrap your own factory instead.
///
/// ```swift
/// let export = PrometheusExport.bootstrap()
/// let pool = WorkerPool(queue: queue, executors: [Sum()])
/// // GET /metrics answers export.text()
/// ```
public struct PrometheusExport: Sendable {
    public let registry: PrometheusCollectorRegistry

    /// Makes a registry and bootstraps swift-metrics with it.
    public static func bootstrap() -> PrometheusExport {
        let export = PrometheusExport(registry: PrometheusCollectorRegistry())
        MetricsSystem.bootstrap(export.factory)
        return export
    }

    /// An export of `registry`, without touching the process's swift-metrics backend.
    public init(registry: PrometheusCollectorRegistry) {
        self.registry = registry
    }

    /// A factory writing into ``registry``, with buckets for job run and wait times.
    public var factory: PrometheusMetricsFactory {
        var factory = PrometheusMetricsFactory(registry: registry)
        let buckets: [Duration] = [
            .milliseconds(1), .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50),
            .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1), .milliseconds(2500),
            .seconds(5), .seconds(10), .seconds(30), .seconds(60), .seconds(300), .seconds(600)
        ]
        factory.durationHistogramBuckets = [
            "jobq_job_duration_seconds": buckets, "jobq_job_queue_wait_seconds": buckets
        ]
        return factory
    }

    /// Every registered metric in Prometheus text exposition format (version 0.0.4).
    public func text() -> String {
        registry.emitToString()
    }

    /// The content type of ``text()``.
    public static let contentType = "text/plain; version=0.0.4; charset=utf-8"
}
