import Hummingbird
import Logging

/// The Hummingbird application jobq's servers run: `router` on `address`, reporting the address
/// it got (the port the system picked, when 0 was asked for).
typealias HTTPApplication<Context: RequestContext> = Application<RouterResponder<Context>>
where Context: InitializableFromSource<ApplicationRequestContextSource>

extension ListenAddress {
    func application<Context>(
        _ router: Router<Context>, logger: Logger, onListening: @escaping @Sendable (ListenAddress) -> Void
    ) -> HTTPApplication<Context> {
        let address = self
        return Application(
            router: router, configuration: .init(address: .hostname(host, port: port), serverName: "jobq"),
            onServerRunning: { channel in
                onListening(ListenAddress(host: address.host, port: channel.localAddress?.port ?? address.port))
            },
            logger: logger)
    }
}
