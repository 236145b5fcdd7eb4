import Foundation
import InMemoryTracing
import Instrumentation
import Synchronization
import Testing
import Tracing

@testable import JobQCore
@testable import JobQSQL
@testable import JobQSQLite

/// The test process's tracer, bootstrapped once (swift-distributed-tracing allows one per
/// process). It keeps only the spans started inside ``record(_:)`` (a task-local scope, which
/// the pools a test runs inherit), so that other tests' jobs leave nothing behind.
final class ScopedTracer: Tracer {
    @TaskLocal static var recording = false

    static let shared: ScopedTracer = {
        let tracer = ScopedTracer()
        InstrumentationSystem.bootstrap(tracer)
        return tracer
    }()

    /// Injects and extracts in-memory trace and span ids.
    private let ids = InMemoryTracer()
    private let finished = Mutex<[FinishedInMemorySpan]>([])
    private let nextID = Atomic<Int>(0)

    /// Runs `body` with spans recorded; returns what it returned and the spans that ended.
    func record<T>(_ body: () async throws -> T) async rethrows -> T {
        try await Self.$recording.withValue(true) { try await body() }
    }

    var finishedSpans: [FinishedInMemorySpan] { finished.withLock { $0 } }

    func startSpan<Instant: TracerInstant>(
        _ operationName: String, context: @autoclosure () -> ServiceContext, ofKind kind: SpanKind,
        at instant: @autoclosure () -> Instant, function: String, file fileID: String, line: UInt
    ) -> InMemorySpan {
        let parent = context()
        let id = "\(nextID.add(1, ordering: .relaxed).newValue)"
        let spanContext =
            parent.inMemorySpanContext.map {
                InMemorySpanContext(traceID: $0.traceID, spanID: "span-\(id)", parentSpanID: $0.spanID)
            } ?? InMemorySpanContext(traceID: "trace-\(id)", spanID: "span-\(id)", parentSpanID: nil)
        let keep = Self.recording
        return InMemorySpan(
            operationName: operationName, context: parent, spanContext: spanContext, kind: kind, startInstant: instant()
        ) {
            span in
            if keep { self.finished.withLock { $0.append(span) } }
        }
    }

    func forceFlush() {}

    func inject<Carrier, Inject: Injector>(
        _ context: ServiceContext, into carrier: inout Carrier, using injector: Inject
    )
    where Carrier == Inject.Carrier {
        ids.inject(context, into: &carrier, using: injector)
    }

    func extract<Carrier, Extract: Extractor>(
        _ carrier: Carrier, into context: inout ServiceContext, using extractor: Extract
    )
    where Carrier == Extract.Carrier {
        ids.extract(carrier, into: &context, using: extractor)
    }
}

/// Opens a span of its own inside the attempt's.
struct Traced: Executor {
    static let name = "traced"
    struct Input: Codable, Sendable { var fail = false }
    func run(_ input: Input, context: JobContext) async throws -> String {
        try withSpan("inside the executor") { _ in
            if input.fail { throw TestFailure(message: "failing on purpose") }
            return "done"
        }
    }
}

@Suite("Traces through swift-distributed-tracing")
struct TracingTests {
    @Test(arguments: TestStore.all) func anAttemptContinuesTheTraceOfTheCodeThatEnqueuedIt(store: TestStore)
        async throws
    {
        let tracer = ScopedTracer.shared
        let queue = try await store.open()
        let name = "traced-\(UUID().uuidString.prefix(8))"
        let (producer, traced, failing, untraced) = try await tracer.record {
            let (producer, jobs) = try await withSpan("POST /reports") { span in
                (
                    span.context.inMemorySpanContext!,
                    [
                        try await queue.enqueue(Traced.self, .init(), options: .init(queue: name)),
                        try await queue.enqueue(
                            Traced.self, .init(fail: true), options: .init(queue: name, maxAttempts: 2))
                    ]
                )
            }
            let untraced = try await queue.enqueue(Traced.self, .init(), options: .init(queue: name))
            try await work(queue, executors: [Traced()], queues: [name])
            return (producer, jobs[0], jobs[1], untraced)
        }

        // What the store keeps: the producer's ids for the traced jobs, nothing for the other.
        let stored = try await queue.storedRows("SELECT id, trace_context FROM jobq_jobs ORDER BY id")
        let contexts = Dictionary(
            uniqueKeysWithValues: stored.map { ($0["id"] as Int64, $0["trace_context"] as String?) })
        let carrier = try #require(contexts[traced.id] ?? nil)
        #expect(carrier.contains(producer.traceID) && carrier.contains(producer.spanID))
        #expect(contexts[untraced.id] ?? "" == nil, "no span was active: no context stored")

        let spans = tracer.finishedSpans
        func attempts(of job: Job) -> [FinishedInMemorySpan] {
            spans.filter {
                $0.operationName == "run traced" && $0.attributes["jobq.queue"]?.toSpanAttribute() == .string(name)
                    && $0.attributes["jobq.job.id"]?.toSpanAttribute() == .int64(job.id)
            }
        }
        let run = try #require(attempts(of: traced).first)
        #expect(run.traceID == producer.traceID, "the attempt is in the producer's trace")
        #expect(run.parentSpanID == producer.spanID, "as a child of the span that enqueued it")
        #expect(run.kind == .consumer)
        #expect(run.attributes["jobq.queue"]?.toSpanAttribute() == .string(name))
        #expect(run.attributes["jobq.executor"]?.toSpanAttribute() == .string("traced"))
        #expect(run.attributes["jobq.attempt"]?.toSpanAttribute() == .int64(1))
        #expect(run.attributes["jobq.outcome"]?.toSpanAttribute() == .string("succeeded"))
        let inner = try #require(
            spans.first { $0.operationName == "inside the executor" && $0.parentSpanID == run.spanID })
        #expect(inner.traceID == producer.traceID, "the executor's own spans are children of the attempt's")

        let failed = attempts(of: failing).sorted {
            ($0.attributes["jobq.attempt"]?.toSpanAttribute() == .int64(1))
                && !($1.attributes["jobq.attempt"]?.toSpanAttribute() == .int64(1))
        }
        #expect(
            failed.map { $0.attributes["jobq.outcome"]?.toSpanAttribute() } == [.string("retried"), .string("dead")])
        #expect(
            failed.allSatisfy { $0.status?.code == .error && $0.errors.count == 1 && $0.traceID == producer.traceID })

        let alone = try #require(attempts(of: untraced).first)
        #expect(
            alone.parentSpanID == nil && alone.traceID != producer.traceID,
            "a job enqueued outside any span starts a trace of its own")
    }
}
