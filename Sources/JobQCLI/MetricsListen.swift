import JobQ
import JobQCommandLine
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
            let address = try ListenAddress(option: "--metrics-listen", text)
            let export = PrometheusExport.bootstrap()
            service = { queue, logger in
                MetricsServer(export: export, queue: queue, address: address, logger: logger) { bound in
                    logger.info("metrics at http://\(bound)/metrics, health at http://\(bound)/healthz")
                }
            }
        #else
            throw CLIError.usage(
                "--metrics-listen: this jobq was built without the HTTP endpoints; build it with "
                    + "`swift build -c release --traits Dashboard` (see the Operations article, Sources/JobQCore/JobQCore.docc/Operations.md)"
            )
        #endif
    }
}

#if Dashboard
    extension ListenAddress {
        /// An address given to the command line; a bad one is a usage error (exit 2).
        init(option: String, _ text: String) throws {
            do {
                try self.init(text, option: option)
            } catch {
                throw CLIError.usage(error.description)
            }
        }
    }
#endif
