import ArgumentParser
import Foundation
import JobQ
import JobQCommandLine
import Logging
import ServiceLifecycle

#if Dashboard
    import JobQDashboard
#endif

struct DashboardCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dashboard",
        abstract:
            "Serve the web dashboard: queues, jobs, workflows, schedules, triggers, batches, with live updates and actions.",
        discussion: helpText(
            """
            Listens on 127.0.0.1:8080 by default. Without an access token it answers only requests
            from this machine (a loopback peer naming localhost, 127.x.y.z or [::1] as its Host). On
            any address beyond loopback it refuses to start without an access token (--token-file or
            JOBQ_DASHBOARD_TOKEN, at least 16 characters), which every request must then carry: the
            sign-in page gives the browser a session cookie that expires after 12 hours; scripts send
            `Authorization: Bearer TOKEN`. Actions are POSTs with a per-process form token, refused
            from other origins; --read-only leaves them out and opens the store without changing it
            (a store that needs `jobq migrate up` is refused). Stops on SIGTERM or SIGINT.

            It also serves the HTTP API under /api/v1 (enqueue, read, wait for results, retry,
            cancel, pause, emit, signal; described at /api/v1/openapi.json), whose requests carry a
            token made with `jobq token add` instead of the dashboard's access, on any address;
            --no-api leaves it out, and so does --read-only.
            """)
    )

    @OptionGroup var store: StoreOptions

    @Option(
        help: ArgumentHelp(
            "Where to listen. A port alone listens on 127.0.0.1; port 0 picks a free one.", valueName: "[host:]port"))
    var listen: String = "127.0.0.1:8080"

    @Option(
        help: ArgumentHelp(
            "A file holding the access token every request must carry (default: $JOBQ_DASHBOARD_TOKEN).",
            valueName: "path"))
    var tokenFile: String?

    @Option(
        help: ArgumentHelp(
            "The access token itself. Other users of this machine can read it in the process list: prefer --token-file.",
            valueName: "token"))
    var token: String?

    @Flag(help: "Show everything, change nothing: no action buttons, every POST refused, no API.")
    var readOnly = false

    @Flag(name: .customLong("no-api"), help: "Do not serve the HTTP API (/api/v1).")
    var noAPI = false

    func run() async throws {
        #if Dashboard
            let address = try ListenAddress(option: "--listen", listen)
            if case .file(let path) = store.location, !FileManager.default.fileExists(atPath: path) {
                throw CLIError.usage("no jobq store at \(path): give the store to show with --db (or $JOBQ_DB)")
            }
            let accessToken = try self.accessToken()
            let options = Dashboard.Options(
                storeName: store.location.description, access: accessToken.map { .token($0) } ?? .loopbackOnly,
                readOnly: readOnly, api: readOnly || noAPI ? nil : HTTPAPI.Options())
            CLILogging.bootstrap
            let logger = Logger(label: "jobq.dashboard")
            if token != nil {
                logger.warning(
                    "--token is visible to other users of this machine in the process list; prefer --token-file or JOBQ_DASHBOARD_TOKEN"
                )
            }
            do {
                // Checked before the store is opened: a refused start changes nothing.
                try DashboardServer.check(address: address, options: options)
            } catch {
                throw CLIError.usage(error.description)
            }
            // Read-only opens the store as it is: no migration, no backup, no byte changed.
            let queue = try await store.open(readOnly: readOnly)
            let server = try DashboardServer(queue: queue, address: address, options: options, logger: logger) {
                bound in
                let api = options.api == nil ? "" : "; HTTP API at http://\(bound)\(HTTPAPI.prefix)/"
                logger.info(
                    "dashboard at http://\(bound)/ (store \(options.storeName)\(options.readOnly ? ", read-only" : ""))\(api)"
                )
            }
            let group = ServiceGroup(
                configuration: ServiceGroupConfiguration(
                    services: [.init(service: server)], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
            try await group.run()
        #else
            throw CLIError.usage(
                "jobq dashboard: this jobq was built without the dashboard; build it with "
                    + "`swift build -c release --traits Dashboard` (see the Operations article, Sources/JobQCore/JobQCore.docc/Operations.md)"
            )
        #endif
    }

    /// The token from --token-file, --token or $JOBQ_DASHBOARD_TOKEN (in that order), without
    /// surrounding whitespace; nil when none is given.
    func accessToken() throws -> String? {
        if let tokenFile {
            guard let text = try? String(contentsOfFile: tokenFile, encoding: .utf8) else {
                throw CLIError.usage(
                    "--token-file \(tokenFile): cannot read it; give a readable file that holds the access token")
            }
            let token = text.trimmingCharacters(in: .whitespacesAndNewlines)
            guard !token.isEmpty else {
                throw CLIError.usage("--token-file \(tokenFile) is empty; write the access token into it")
            }
            return token
        }
        if let token { return token }
        return ProcessInfo.processInfo.environment["JOBQ_DASHBOARD_TOKEN"].flatMap {
            let token = $0.trimmingCharacters(in: .whitespacesAndNewlines)
            return token.isEmpty ? nil : token
        }
    }
}
