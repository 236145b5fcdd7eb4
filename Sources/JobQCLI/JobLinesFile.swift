import Foundation
import JobQ

/// Reads `jobq enqueue --file`: one JSON object per line. Blank lines are skipped. Every error
/// names its line, and nothing is enqueued unless every line is valid.
enum JobLinesFile {
    static func read(path: String, allowUnknownExecutors: Bool) throws -> [JobRequest] {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw CLIError.usage("--file: cannot read \(path): \((error as NSError).localizedDescription)")
        }
        guard let text = String(data: data, encoding: .utf8) else {
            throw CLIError.usage("--file: \(path) is not valid UTF-8 text")
        }
        var requests: [JobRequest] = []
        for (index, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let trimmed = line.trimmingCharacters(in: .whitespacesAndNewlines)
            if trimmed.isEmpty { continue }
            do {
                requests.append(try parse(trimmed, allowUnknownExecutors: allowUnknownExecutors))
            } catch let error as CLIError {
                throw CLIError.usage("\(path) line \(index + 1): \(error.message)")
            } catch let error as JobQueueError {
                throw CLIError.usage("\(path) line \(index + 1): \(error.description)")
            }
        }
        guard !requests.isEmpty else { throw CLIError.usage("--file: \(path) has no jobs") }
        return requests
    }

    static func parse(_ line: String, allowUnknownExecutors: Bool) throws -> JobRequest {
        let request = try JobRequest(jsonLine: line)
        try checkExecutorName(request.executor, allowUnknown: allowUnknownExecutors)
        return request
    }
}
