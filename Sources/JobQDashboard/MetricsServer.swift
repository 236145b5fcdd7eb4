import Foundation
import Hummingbird
import JobQCore
import Logging
import ServiceLifecycle

/// An HTTP server with `/metrics` (Prometheus text) and `/healthz` (whether the store answers),
/// run as a swift-service-lifecycle `Service` beside a ``WorkerPool``: what
/// `jobq work --metrics-listen` starts.
///
/// ```swift
/// let export = PrometheusExport.bootstrap()
/// let server = MetricsServer(export: export, queue: queue, address: try ListenAddress("127.0.0.1:9464"))
/// let group = ServiceGroup(configuration: .init(services: [pool, server], logger: logger))
/// try await group.run()
/// ```
public struct MetricsServer: Service {
    let application: HTTPApplication<BasicRequestContext>

    /// - Parameter onListening: Called with the address the server got (its port, when 0 was
    ///   asked for).
    public init(
        export: PrometheusExport, queue: JobQueue, address: ListenAddress,
        logger: Logger = Logger(label: "jobq.metrics"),
        onListening: @escaping @Sendable (ListenAddress) -> Void = { _ in }
    ) {
        let router = Router()
        router.addMetricsRoutes(export: export, queue: queue)
        application = address.application(router, logger: logger, onListening: onListening)
    }

    public func run() async throws {
        try await application.run()
    }
}

extension Router {
    /// Adds `GET /metrics` and `GET /healthz` to a router of your own.
    ///
    /// ```swift
    /// let router = Router()
    /// router.addMetricsRoutes(export: PrometheusExport.bootstrap(), queue: queue)
    /// ```
    public func addMetricsRoutes(export: PrometheusExport, queue: JobQueue) {
        get("metrics") { _, _ -> Response in
            Response(
                status: .ok, headers: [.contentType: PrometheusExport.contentType],
                body: .init(byteBuffer: ByteBuffer(string: export.text())))
        }
        get("healthz") { _, context -> Response in await Response.health(of: queue, logger: context.logger) }
    }
}

extension Response {
    /// `/healthz`: whether the store answers one indexed read. The reason of a failure goes to
    /// the log, not to whoever asked (it may name the store's host, path or user).
    static func health(of queue: JobQueue, logger: Logger) async -> Response {
        do {
            _ = try await queue.latestEventID()
            return .json(["status": "ok"])
        } catch {
            logger.error("health check: the store did not answer: \(error)")
            return .json(["status": "unavailable"], status: .serviceUnavailable)
        }
    }

    /// A JSON object of strings, with keys in a stable order.
    static func json(_ object: [String: String], status: HTTPResponse.Status = .ok) -> Response {
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8)
        var body = ByteBuffer(bytes: data)
        body.writeString("\n")
        return Response(status: status, headers: [.contentType: "application/json"], body: .init(byteBuffer: body))
    }
}
