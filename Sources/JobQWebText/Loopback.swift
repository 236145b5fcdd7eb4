import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Names and addresses that certainly mean this machine.
package enum Loopback {
    /// `localhost`, `::1` or an IPv4 literal in 127.0.0.0/8 (dotted decimal, four parts). A DNS
    /// name that merely starts with `127.` can resolve anywhere, so it is not one.
    package static func isName(_ host: String) -> Bool {
        let host = host.lowercased()
        return host == "localhost" || isAddress(host)
    }

    /// An IP literal in 127.0.0.0/8, `::1`, or `::ffff:127.x.y.z`.
    package static func isAddress(_ text: String) -> Bool {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            return UInt32(bigEndian: v4.s_addr) >> 24 == 127
        }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, text, &v6) == 1 else { return false }
        let bytes = withUnsafeBytes(of: &v6) { Array($0) }
        if bytes[0..<15].allSatisfy({ $0 == 0 }) && bytes[15] == 1 { return true }
        // An IPv4 loopback peer seen through a dual-stack socket.
        return bytes[0..<10].allSatisfy { $0 == 0 } && bytes[10] == 0xff && bytes[11] == 0xff && bytes[12] == 127
    }

    /// The host part of a `Host` header (`name`, `name:port`, `[v6]`, `[v6]:port`), or nil when
    /// the header is not one of those, strictly: `localhost:1@evil.com` and `[::1]evil.com` are
    /// no hosts at all, rather than `localhost` and `::1`.
    package static func host(ofAuthority authority: String) -> String? {
        var rest = Substring(authority)
        let host: Substring
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else { return nil }
            host = rest[rest.index(after: rest.startIndex)..<close]
            rest = rest[rest.index(after: close)...]
            guard host.allSatisfy({ $0.isHexDigit || $0 == ":" || $0 == "." }), !host.isEmpty else { return nil }
        } else {
            host = rest.prefix { $0 != ":" }
            rest = rest.dropFirst(host.count)
            // A registered name or an IPv4 literal: letters, digits, hyphens and dots only.
            guard !host.isEmpty,
                host.unicodeScalars.allSatisfy({
                    $0.isASCII && (CharacterSet.alphanumerics.contains($0) || $0 == "-" || $0 == ".")
                })
            else { return nil }
        }
        if !rest.isEmpty {
            // `:port`, 1 to 5 digits.
            let port = rest.dropFirst()
            guard rest.first == ":", (1...5).contains(port.count), port.allSatisfy({ $0.isASCII && $0.isNumber }) else {
                return nil
            }
        }
        return String(host)
    }
}
