import Foundation
import Instrumentation
import ServiceContextModule
import Tracing

/// Traces through swift-distributed-tracing, continued across the queue: `enqueue` stores the
/// caller's trace context on the job (what the bootstrapped instrument injects: with an
/// OpenTelemetry tracer, the W3C `traceparent` and `tracestate`), and the worker runs each
/// attempt in a span that continues it, so a job's run shows up under the request that asked
/// for it, however long it waited and whichever process ran it.
///
/// The span is named `run <executor>`, of kind consumer, with the attributes `jobq.job.id`,
/// `jobq.queue`, `jobq.executor`, `jobq.attempt` and, when it ends, `jobq.outcome` (as in the
/// `jobq_jobs_completed_total` metric); a failed attempt records its error and an error status.
/// Executors run inside it, so their own spans are its children.
///
/// With no tracer bootstrapped (`InstrumentationSystem.bootstrap`), nothing is injected,
/// stored or started.
///
/// ```swift
/// InstrumentationSystem.bootstrap(otelTracer)          // once, at start-up
/// try await withSpan("POST /reports") { _ in
///     try await queue.enqueue(Report.self, input)     // the job's run continues this trace
/// }
/// ```
enum JobTracing {
    /// The process's tracer, or nil while none is bootstrapped.
    static var tracer: (any Tracer)? {
        let tracer = InstrumentationSystem.tracer
        return tracer is NoOpTracer ? nil : tracer
    }

    /// The current task's trace context as a JSON object, or nil when there is nothing to carry.
    static func currentContextJSON() -> String? {
        guard let tracer, let context = ServiceContext.current else { return nil }
        var carrier: [String: String] = [:]
        tracer.inject(context, into: &carrier, using: CarrierInjector())
        guard !carrier.isEmpty, let data = try? JSONSerialization.data(withJSONObject: carrier, options: [.sortedKeys])
        else {
            return nil
        }
        return String(decoding: data, as: UTF8.self)
    }

    /// Starts the span of an attempt, continuing the trace stored with the job.
    static func startAttemptSpan(_ job: ClaimedJob, tracer: any Tracer) -> any Span {
        var context = ServiceContext.topLevel
        if let json = job.traceContextJSON,
            let carrier = (try? JSONSerialization.jsonObject(with: Data(json.utf8))) as? [String: String]
        {
            tracer.extract(carrier, into: &context, using: CarrierExtractor())
        }
        let span = tracer.startAnySpan("run \(job.executor)", context: context, ofKind: .consumer)
        span.attributes["jobq.job.id"] = job.id
        span.attributes["jobq.queue"] = job.queue
        span.attributes["jobq.executor"] = job.executor
        span.attributes["jobq.attempt"] = job.attempt
        return span
    }

    /// Ends an attempt's span with what became of it.
    static func end(_ span: any Span, end: AttemptRace.End, outcome: AttemptOutcome?) {
        let label = JobMetrics.Outcome(outcome)
        span.attributes["jobq.outcome"] = label.rawValue
        switch end {
        case .finished(.failure(let error)) where label == .retried || label == .dead:
            span.recordError(error)
            span.setStatus(SpanStatus(code: .error, message: "\(error)"))
        case .timedOut(let limit):
            span.setStatus(SpanStatus(code: .error, message: "timed out after \(DurationParser.format(limit))"))
        default:
            break
        }
        span.end()
    }
}

/// Writes an instrument's values into a dictionary carrier.
struct CarrierInjector: Injector {
    func inject(_ value: String, forKey key: String, into carrier: inout [String: String]) {
        carrier[key] = value
    }
}

/// Reads an instrument's values from a dictionary carrier.
struct CarrierExtractor: Extractor {
    func extract(key: String, from carrier: [String: String]) -> String? {
        carrier[key]
    }
}
