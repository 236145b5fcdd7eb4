#if Dashboard
    import Foundation
    import JobQ
    import JobQCommandLine
    import JobQDashboard
    import Logging
    import Synchronization

    extension BenchWorkloads {
        /// Enqueues `count` jobs through the HTTP API, one `POST /api/v1/jobs` per job on one
        /// keep-alive loopback connection, against a server in this process. Returns jobs per
        /// second; ``lastCPUPerItem`` is this process's CPU per job meanwhile (server and the
        /// bench's small client together).
        mutating func enqueueThroughAPI(_ count: Int) async throws -> Double {
            let queue = try open(freshPath())
            let secret = try await queue.addAPIToken(named: "bench", scopes: [.enqueue]).secret
            let bound = Mutex<Int?>(nil)
            // Quiet: the server's stop with the client's connection just closed logs an error.
            var logger = Logger(label: "jobq.bench")
            logger.logLevel = .critical
            let server = try DashboardServer(
                queue: queue, address: ListenAddress(host: "127.0.0.1", port: 0),
                options: .init(storeName: "bench", access: .loopbackOnly), logger: logger
            ) { address in bound.withLock { $0 = address.port } }
            let serving = Task { try await server.run() }
            defer { serving.cancel() }
            let deadline = ContinuousClock.now + .seconds(30)
            while bound.withLock({ $0 }) == nil {
                guard ContinuousClock.now < deadline else {
                    throw CLIError.failure("bench: the API server did not listen")
                }
                try await Task.sleep(for: .milliseconds(10))
            }
            let port = bound.withLock { $0 }!
            let bodies = (0..<count).map { #"{"executor":"sum","payload":{"a":\#($0),"b":1}}"# }
            let cpu = ProcessCPU.now()
            let start = ContinuousClock.now
            // The client blocks on its socket: on a thread of its own, off Swift's pool, which
            // the server needs.
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                Thread.detachNewThread {
                    continuation.resume(
                        with: Result {
                            let connection = try LoopbackHTTPConnection(port: port)
                            for body in bodies {
                                let status = try connection.post("/api/v1/jobs", token: secret, json: body)
                                guard status == 201 else { throw CLIError.failure("bench: the API answered \(status)") }
                            }
                        })
                }
            }
            let elapsed = (ContinuousClock.now - start).inSeconds
            lastCPUPerItem = (ProcessCPU.now() - cpu) / Double(count)
            let stored = try await queue.count(where: .all)
            guard stored == count else { throw CLIError.failure("bench: \(stored) jobs stored of \(count) sent") }
            return Double(count) / elapsed
        }
    }

    /// One keep-alive HTTP/1.1 connection to a loopback port, with blocking sockets: the
    /// smallest client there is, so that the API's row measures the server.
    final class LoopbackHTTPConnection {
        private let socket: Int32
        private var buffered: [UInt8] = []

        init(port: Int) throws {
            socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard socket >= 0 else { throw CLIError.failure("bench: no socket") }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            guard connected == 0 else { throw CLIError.failure("bench: cannot connect to port \(port)") }
            var noDelay: Int32 = 1
            setsockopt(socket, Int32(IPPROTO_TCP), TCP_NODELAY, &noDelay, socklen_t(MemoryLayout<Int32>.size))
        }

        deinit { close(socket) }

        /// Sends a POST of `json` and reads the whole answer; returns its status.
        func post(_ path: String, token: String, json: String) throws -> Int {
            let request =
                "POST \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(token)\r\n"
                + "Content-Type: application/json\r\nContent-Length: \(json.utf8.count)\r\n\r\n\(json)"
            let bytes = Array(request.utf8)
            var sent = 0
            while sent < bytes.count {
                let count = bytes[sent...].withUnsafeBytes { send(socket, $0.baseAddress, $0.count, 0) }
                guard count > 0 else { throw CLIError.failure("bench: the API server closed the connection") }
                sent += count
            }
            let head = try readHead()
            guard let statusText = head.split(separator: " ").dropFirst().first, let status = Int(statusText) else {
                throw CLIError.failure("bench: the API sent no status line")
            }
            let length =
                head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("content-length:") }
                .flatMap { Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) } ?? 0
            try read(atLeast: length)
            buffered.removeFirst(length)
            return status
        }

        /// The head of the next answer (up to its blank line), removed from the buffer.
        private func readHead() throws -> String {
            let end: [UInt8] = Array("\r\n\r\n".utf8)
            while true {
                if buffered.count >= 4 {
                    for index in 0...(buffered.count - 4) where Array(buffered[index..<index + 4]) == end {
                        let head = String(decoding: buffered[..<index], as: UTF8.self)
                        buffered.removeFirst(index + 4)
                        return head
                    }
                }
                try fill()
            }
        }

        private func read(atLeast count: Int) throws {
            while buffered.count < count { try fill() }
        }

        private func fill() throws {
            var chunk = [UInt8](repeating: 0, count: 16 * 1024)
            let count = chunk.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { throw CLIError.failure("bench: the API server closed the connection") }
            buffered += chunk[0..<count]
        }
    }
#endif
