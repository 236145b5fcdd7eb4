import ArgumentParser
import Foundation
import JobQ
import Logging
import ServiceLifecycle

#if Dashboard
import JobQDashboard
#endif

struct DashboardCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dashboard",
        abstract: "Serve the web dashboard: queues, jobs, workflows, schedules, triggers, batches, with live updates and actions.",
        discussion: helpText("""
            Listens on 127.0.0.1:8080 by default. On any address beyond loopback it refuses to start
            without an access token (--token or JOBQ_DASHBOARD_TOKEN, at least 16 characters), which
            every request must then carry (the sign-in page sets it as a cookie; scripts send
            `Authorization: Bearer TOKEN`). Actions are POSTs with a per-process form token, refused
            from other origins; --read-only leaves them out. Stops on SIGTERM or SIGINT.
            """)
    )

    @OptionGroup var store: StoreOptions

    @Option(help: ArgumentHelp("Where to listen. A port alone listens on 127.0.0.1; port 0 picks a free one.", valueName: "[host:]port"))
    var listen: String = "127.0.0.1:8080"

    @Option(help: ArgumentHelp("The access token every request must carry (default: $JOBQ_DASHBOARD_TOKEN).", valueName: "token"))
    var token: String?

    @Flag(help: "Show everything, change nothing: no action buttons, every POST refused.")
    var readOnly = false

    func run() async throws {
        #if Dashboard
        let address = try ListenAddress(option: "--listen", listen)
        let environmentToken = ProcessInfo.processInfo.environment["JOBQ_DASHBOARD_TOKEN"].flatMap { $0.isEmpty ? nil : $0 }
        if case .file(let path) = store.location, !FileManager.default.fileExists(atPath: path) {
            throw CLIError.usage("no jobq store at \(path): give the store to show with --db (or $JOBQ_DB)")
        }
        let options = Dashboard.Options(storeName: store.location.description, accessToken: token ?? environmentToken, readOnly: readOnly)
        CLILogging.bootstrap
        let logger = Logger(label: "jobq.dashboard")
        do {
            // Checked before the store is opened: a refused start changes nothing.
            try DashboardServer.check(address: address, options: options)
        } catch {
            throw CLIError.usage(error.description)
        }
        let queue = try await store.open()
        let server = try DashboardServer(queue: queue, address: address, options: options, logger: logger) { bound in
            logger.info("dashboard at http://\(bound)/ (store \(options.storeName)\(options.readOnly ? ", read-only" : ""))")
        }
        let group = ServiceGroup(
            configuration: ServiceGroupConfiguration(
                services: [.init(service: server)], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        try await group.run()
        #else
        throw CLIError.usage(
            "jobq dashboard: this jobq was built without the dashboard; build it with "
                + "`swift build -c release --traits Dashboard` (see README, \"Metrics, traces and the dashboard\")")
        #endif
    }
}
