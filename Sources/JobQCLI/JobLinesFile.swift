import Foundation
import JobQ
import JobQCommandLine
import Synchronization

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
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        // Lines parse independently: split them over the cores, in order, and report the error
        // of the earliest bad line, as a one-by-one reading would.
        let chunkSize = 2_000
        let chunks = stride(from: 0, to: lines.count, by: chunkSize).map { $0..<min($0 + chunkSize, lines.count) }
        let results = Mutex([Result<[JobRequest], CLIError>?](repeating: nil, count: chunks.count))
        DispatchQueue.concurrentPerform(iterations: chunks.count) { chunk in
            var parsed: [JobRequest] = []
            parsed.reserveCapacity(chunks[chunk].count)
            var result: Result<[JobRequest], CLIError> = .success([])
            for index in chunks[chunk] {
                let trimmed = lines[index].trimmingCharacters(in: .whitespacesAndNewlines)
                if trimmed.isEmpty { continue }
                do {
                    parsed.append(try parse(trimmed, allowUnknownExecutors: allowUnknownExecutors))
                } catch let error as CLIError {
                    result = .failure(.usage("\(path) line \(index + 1): \(error.message)"))
                    break
                } catch {
                    result = .failure(
                        .usage("\(path) line \(index + 1): \((error as? JobQueueError)?.description ?? "\(error)")"))
                    break
                }
            }
            if case .success = result { result = .success(parsed) }
            results.withLock { $0[chunk] = result }
        }
        var requests: [JobRequest] = []
        requests.reserveCapacity(lines.count)
        for result in results.withLock({ $0 }) {
            requests += try result!.get()
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
