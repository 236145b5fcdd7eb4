import Foundation
import JobQWebText

/// Where an HTTP server of jobq listens: `HOST:PORT`, `[IPv6]:PORT`, or a bare `PORT` on
/// loopback. Port 0 lets the system pick a free port (the server logs the one it got).
///
/// ```swift
/// let address = try ListenAddress("127.0.0.1:9464")
/// address.isLoopback   // true
/// ```
public struct ListenAddress: Sendable, Hashable, CustomStringConvertible {
    public var host: String
    public var port: Int

    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// Parses `text`; `option` names the command-line option in the error.
    public init(_ text: String, option: String = "the address") throws(ListenAddressError) {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        var host = "127.0.0.1"
        var portText = trimmed
        if trimmed.hasPrefix("[") {
            guard let close = trimmed.firstIndex(of: "]"), trimmed[trimmed.index(after: close)...].hasPrefix(":") else {
                throw ListenAddressError(message: "\(option) '\(text)' is not [IPv6]:PORT, e.g. [::1]:9464")
            }
            host = String(trimmed[trimmed.index(after: trimmed.startIndex)..<close])
            portText = String(trimmed[trimmed.index(close, offsetBy: 2)...])
        } else if let colon = trimmed.lastIndex(of: ":") {
            host = String(trimmed[..<colon])
            portText = String(trimmed[trimmed.index(after: colon)...])
            guard !host.contains(":") else {
                throw ListenAddressError(
                    message: "\(option) '\(text)': write an IPv6 address in brackets, e.g. [::1]:9464")
            }
        }
        guard !host.isEmpty, host.allSatisfy({ $0.isLetter || $0.isNumber || ".-:_%".contains($0) }) else {
            throw ListenAddressError(
                message: "\(option) '\(text)' has no usable host: give HOST:PORT, e.g. 127.0.0.1:9464, or a port alone")
        }
        guard let port = Int(portText), (0...65535).contains(port) else {
            throw ListenAddressError(
                message:
                    "\(option) '\(text)' has no port from 0 to 65535: give HOST:PORT, e.g. 127.0.0.1:9464, or a port alone"
            )
        }
        self.host = host
        self.port = port
    }

    /// Whether only this machine can reach the address: `localhost`, `::1` or an IPv4 literal in
    /// 127.0.0.0/8. A name such as `127.corp.example` can resolve anywhere, so it is not.
    public var isLoopback: Bool {
        Loopback.isName(host)
    }

    public var description: String {
        host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }
}

/// A listen address that cannot be used; the message says what to give instead.
public struct ListenAddressError: Error, Sendable, CustomStringConvertible {
    public let message: String
    public var description: String { message }
}
