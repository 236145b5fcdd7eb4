import Foundation
import JobQ
import ServiceLifecycle

/// Shows what a pool is doing: a live status line on a terminal (redrawn twice a second), or a
/// plain progress line every 10 seconds otherwise. Stops on graceful shutdown.
final class ProgressReporter: Service, Sendable {
    let pool: WorkerPool
    let started = ContinuousClock.now

    init(pool: WorkerPool) { self.pool = pool }

    func run() async throws {
        let output = TerminalOutput.shared
        let interval: Duration = output.isTerminal ? .milliseconds(500) : .seconds(10)
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                try? await Task.sleep(for: interval)
                if Task.isCancelled { break }
                let backlog = (try? await self.pool.queue.backlog(queues: self.pool.queues)) ?? 0
                let line = self.line(backlog: backlog)
                if output.isTerminal { output.status(line) } else { output.writeLine(line) }
            }
        }
    }

    func line(backlog: Int?) -> String {
        let stats = pool.statistics
        let elapsed = (ContinuousClock.now - started).inSeconds
        let rate = elapsed > 0 ? Double(stats.finished) / elapsed : 0
        var parts = [
            "done \(stats.succeeded)", "failed \(stats.retried)", "dead \(stats.dead)", "running \(stats.running)"
        ]
        if let backlog { parts.append("backlog \(backlog)") }
        parts.append(String(format: "%.0f jobs/s", rate))
        return parts.joined(separator: "  ")
    }

    func printSummary() {
        TerminalOutput.shared.endStatus()
        let stats = pool.statistics
        let elapsed = (ContinuousClock.now - started).inSeconds
        TerminalOutput.shared.writeLine(
            "worked \(String(format: "%.1f", elapsed))s: \(stats.succeeded) succeeded, \(stats.retried) failed attempts (will retry), "
                + "\(stats.dead) dead, \(stats.released) released"
                + String(format: ", %.0f jobs/s", elapsed > 0 ? Double(stats.finished) / elapsed : 0))
    }
}
