import Foundation
import Logging
import Synchronization

/// Writes log lines to standard error. On a terminal it first clears the live status line, so
/// log lines and the status line never mix.
struct CLILogHandler: LogHandler {
    var logLevel: Logger.Level
    var metadata: Logger.Metadata = [:]
    let label: String

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let merged = metadata.merging(event.metadata ?? [:]) { $1 }
        let fields = merged.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        let time = Date().formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
        let line = "\(time) \(event.level) \(event.message)\(fields.isEmpty ? "" : " " + fields)"
        TerminalOutput.shared.writeLine(line)
    }
}

/// Serializes writes to standard error and owns the live status line.
final class TerminalOutput: Sendable {
    static let shared = TerminalOutput()
    private let statusShown = Mutex(false)
    let isTerminal = standardErrorIsTerminal

    /// Writes a whole line, clearing the status line first on a terminal.
    func writeLine(_ line: String) {
        statusShown.withLock { shown in
            var text = line + "\n"
            if shown {
                text = "\r\u{1B}[K" + text
                shown = false
            }
            FileHandle.standardError.write(Data(text.utf8))
        }
    }

    /// Replaces the live status line (terminal only).
    func status(_ line: String) {
        statusShown.withLock { shown in
            FileHandle.standardError.write(Data(("\r\u{1B}[K" + line).utf8))
            shown = true
        }
    }

    /// Ends the status line so later output starts on a fresh line.
    func endStatus() {
        statusShown.withLock { shown in
            if shown {
                FileHandle.standardError.write(Data("\n".utf8))
                shown = false
            }
        }
    }
}

enum CLILogging {
    static let bootstrap: Void = {
        LoggingSystem.bootstrap { label in
            let level: Logger.Level
            if let text = ProcessInfo.processInfo.environment["JOBQ_LOG_LEVEL"],
                let parsed = Logger.Level(rawValue: text)
            {
                level = parsed
            } else {
                level = .info
            }
            return CLILogHandler(logLevel: level, label: label)
        }
    }()
}
