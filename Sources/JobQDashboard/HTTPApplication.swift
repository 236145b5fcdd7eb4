import Hummingbird
import Logging

/// The Hummingbird application both of jobq's servers run: `router` on `address`, reporting the
/// address it got (the port the system picked, when 0 was asked for).
typealias HTTPApplication = Application<RouterResponder<BasicRequestContext>>

extension ListenAddress {
    func application(
        _ router: Router<BasicRequestContext>, logger: Logger, onListening: @escaping @Sendable (ListenAddress) -> Void
    ) -> HTTPApplication {
        let address = self
        return Application(
            router: router, configuration: .init(address: .hostname(host, port: port), serverName: "jobq"),
            onServerRunning: { channel in
                onListening(ListenAddress(host: address.host, port: channel.localAddress?.port ?? address.port))
            },
            logger: logger)
    }
}
