import JobQ
import Logging
import ServiceLifecycle

#if Dashboard
import JobQDashboard
#endif

/// `jobq work --metrics-listen`: Prometheus metrics and a health check over HTTP.
struct MetricsListen {
    /// Makes the server to run beside the pool; it logs the address it listens on.
    let service: (_ queue: JobQueue, _ logger: Logger) -> any Service

    /// Checks the address and installs the Prometheus backend; call before the pool is made, so
    /// that the pool counts into it.
    init(_ text: String) throws {
        #if Dashboard
        let address: ListenAddress
        do {
            address = try ListenAddress(text, option: "--metrics-listen")
        } catch {
            throw CLIError.usage(error.description)
        }
        let export = PrometheusExport.bootstrap()
        service = { queue, logger in
            MetricsServer(export: export, queue: queue, address: address, logger: logger) { bound in
                logger.info("metrics at http://\(bound)/metrics, health at http://\(bound)/healthz")
            }
        }
        #else
        throw CLIError.usage(
            "--metrics-listen: this jobq was built without the HTTP endpoints; build it with "
                + "`swift build -c release --traits Dashboard` (see README, \"Metrics and dashboard\")")
        #endif
    }
}
