import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A TCP relay on 127.0.0.1 that holds everything it forwards for `oneWayDelay` in each
/// direction, so that a round trip through it takes 2 × `oneWayDelay` longer: a database server
/// across a network, on one machine (the bench's rows at 1 ms round trip). Bytes keep their
/// order and are never held back by the bytes behind them (each chunk is due `oneWayDelay`
/// after it was read). ``cut()`` stops every byte until ``restore()``, as a cut network does:
/// connections stay open and nothing arrives (the tests of the client's deadline).
///
/// ```swift
/// let relay = try LatencyRelay(targetHost: "127.0.0.1", targetPort: 5432, oneWayDelay: .microseconds(500))
/// // connect to 127.0.0.1:\(relay.port) instead of 5432
/// relay.stop()
/// ```
public final class LatencyRelay: Sendable {
    /// The port the relay listens on; connect here instead of the target.
    public let port: Int
    private let listener: Int32
    private let oneWayDelay: Duration
    private let target: sockaddr_in
    private let gate = Gate()

    public init(targetHost: String, targetPort: Int, oneWayDelay: Duration) throws {
        self.oneWayDelay = oneWayDelay
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(targetPort).bigEndian)
        let host = targetHost == "localhost" ? "127.0.0.1" : targetHost
        guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else {
            throw RelayError(message: "the latency relay needs an IPv4 address for the server, got '\(targetHost)'")
        }
        target = address
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var yes: Int32 = 1
        setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var local = sockaddr_in()
        local.sin_family = sa_family_t(AF_INET)
        local.sin_port = 0
        inet_pton(AF_INET, "127.0.0.1", &local.sin_addr)
        let bound = withUnsafePointer(to: &local) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, listen(listener, 128) == 0 else {
            close(listener)
            throw RelayError(message: "the latency relay could not listen: errno \(errno)")
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &local) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) }
        }
        port = Int(UInt16(bigEndian: local.sin_port))
        self.listener = listener
        let target = self.target
        let delay = oneWayDelay
        let gate = self.gate
        Thread.detachNewThread {
            while true {
                let client = accept(listener, nil, nil)
                guard client >= 0 else { return }  // the listener was closed
                let server = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
                var address = target
                let connected = withUnsafePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        connect(server, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                    }
                }
                guard connected == 0 else {
                    close(client)
                    close(server)
                    continue
                }
                for descriptor in [client, server] {
                    var on: Int32 = 1
                    setsockopt(descriptor, Int32(IPPROTO_TCP), TCP_NODELAY, &on, socklen_t(MemoryLayout<Int32>.size))
                }
                let ends = Ends(client: client, server: server)
                Pump(from: client, to: server, delay: delay, ends: ends, gate: gate).start()
                Pump(from: server, to: client, delay: delay, ends: ends, gate: gate).start()
            }
        }
    }

    /// Holds every byte from now on, in both directions, until ``restore()``.
    public func cut() { gate.closed.store(true, ordering: .releasing) }

    /// Lets the held bytes, and what follows, through again.
    public func restore() { gate.closed.store(false, ordering: .releasing) }

    /// Stops accepting; relayed connections end with their peers.
    public func stop() {
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
    }
}

/// The relay could not start.
public struct RelayError: Error, CustomStringConvertible {
    public let message: String
    public var description: String { message }
}

/// Whether the network is cut.
private final class Gate: Sendable {
    let closed = Atomic<Bool>(false)
}

/// The two sockets of one relayed connection, closed once both directions ended.
private final class Ends: @unchecked Sendable {
    // Unchecked: `open` is only changed under `lock`.
    private let lock = NSLock()
    private var open = 2
    let client: Int32
    let server: Int32

    init(client: Int32, server: Int32) {
        self.client = client
        self.server = server
    }

    func oneEnded() {
        lock.lock()
        open -= 1
        let last = open == 0
        lock.unlock()
        if last {
            close(client)
            close(server)
        }
    }
}

/// One direction: a reader that stamps each chunk with the time it is due, and a writer that
/// sends each chunk when it is due.
private final class Pump: @unchecked Sendable {
    // Unchecked: `queue` and `finished` are only touched under `condition`.
    private let from: Int32
    private let to: Int32
    private let delay: Duration
    private let ends: Ends
    private let gate: Gate
    private let condition = NSCondition()
    private var queue: [(due: ContinuousClock.Instant, bytes: [UInt8])] = []
    private var finished = false

    init(from: Int32, to: Int32, delay: Duration, ends: Ends, gate: Gate) {
        self.gate = gate
        self.from = from
        self.to = to
        self.delay = delay
        self.ends = ends
    }

    func start() {
        Thread.detachNewThread { self.read() }
        Thread.detachNewThread { self.write() }
    }

    private func read() {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(from, $0.baseAddress, $0.count, 0) }
            condition.lock()
            if count <= 0 {
                finished = true
            } else {
                queue.append((ContinuousClock.now + delay, Array(buffer[0..<count])))
            }
            condition.signal()
            condition.unlock()
            if count <= 0 { return }
        }
    }

    private func write() {
        while true {
            condition.lock()
            while queue.isEmpty && !finished { condition.wait() }
            if queue.isEmpty {
                condition.unlock()
                shutdown(to, Int32(SHUT_WR))
                ends.oneEnded()
                return
            }
            let (due, bytes) = queue.removeFirst()
            condition.unlock()
            let wait = due - ContinuousClock.now
            if wait > .zero {
                Thread.sleep(
                    forTimeInterval: Double(wait.components.attoseconds) / 1e18 + Double(wait.components.seconds))
            }
            while gate.closed.load(ordering: .acquiring) { Thread.sleep(forTimeInterval: 0.01) }
            var sent = 0
            while sent < bytes.count {
                let result = bytes[sent...].withUnsafeBytes { send(to, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                if result <= 0 {
                    // The peer is gone: stop reading from the other side too.
                    shutdown(from, Int32(SHUT_RDWR))
                    condition.lock()
                    queue.removeAll()
                    condition.unlock()
                    break
                }
                sent += result
            }
        }
    }
}
