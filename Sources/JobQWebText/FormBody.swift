import Foundation

/// An `application/x-www-form-urlencoded` body as fields: the first value of each name wins;
/// a pair that does not decode is left out.
package enum FormBody {
    package static func parse(_ text: String) -> [String: String] {
        var fields: [String: String] = [:]
        for pair in text.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            func decode(_ part: Substring) -> String? {
                String(part).replacingOccurrences(of: "+", with: " ").removingPercentEncoding
            }
            guard let name = decode(parts[0]), let value = parts.count == 2 ? decode(parts[1]) : "" else { continue }
            if fields[name] == nil { fields[name] = value }
        }
        return fields
    }
}
