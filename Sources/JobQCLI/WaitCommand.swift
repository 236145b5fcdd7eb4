import ArgumentParser
import Foundation
import JobQ
import JobQCommandLine

struct WaitCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "wait",
        abstract:
            "Wait until jobs (or a workflow) finish. Exit 0 if all succeeded, 1 if any died or was cancelled, 124 on timeout.",
        discussion: "On a terminal it draws a progress bar; an unknown id exits 3.")

    @OptionGroup var store: StoreOptions

    @Argument(help: "The jobs' ids.")
    var ids: [Int64] = []

    @Option(
        help: ArgumentHelp(
            "Wait for this workflow instead: exit 0 if it succeeded, 1 if it failed or was cancelled.", valueName: "id")
    )
    var workflow: Int64?

    @Option(help: ArgumentHelp("Give up after this long (exit 124).", valueName: "duration"))
    var timeout: String?

    func run() async throws {
        guard ids.isEmpty != (workflow == nil) else {
            throw CLIError.usage("name job ids or --workflow ID (one of the two)")
        }
        let limit = try timeout.map { try parseDuration($0, option: "--timeout") }
        let queue = try await store.open()
        let deadline = limit.map { ContinuousClock.now + $0 }
        let output = TerminalOutput.shared
        if let workflow {
            return try await wait(for: workflow, queue: queue, deadline: deadline, output: output)
        }
        var jobs: [Job] = []
        while true {
            jobs = []
            for id in ids {
                guard let job = try await queue.job(id) else {
                    output.endStatus()
                    throw CLIError(message: "no job with id \(id); list jobs with `jobq list`", exitCode: .notFound)
                }
                jobs.append(job)
            }
            let finished = jobs.filter(\.state.isFinal).count
            if output.isTerminal { output.status(Self.bar(jobs)) }
            if finished == jobs.count { break }
            if let deadline, ContinuousClock.now >= deadline {
                output.endStatus()
                printError(
                    "timed out after \(timeout ?? ""): \(jobs.count - finished) of \(jobs.count) job(s) not finished")
                throw ExitCode(124)
            }
            // Reading a few rows ten times a second is cheaper than following the feed, and
            // it serves the deadline and the progress bar alike.
            try await Task.sleep(for: .milliseconds(100))
        }
        output.endStatus()
        for job in jobs {
            print("job \(job.id) \(job.state.rawValue)" + (job.error.map { ": \($0)" } ?? ""))
        }
        if jobs.contains(where: { $0.state != .succeeded }) { throw ExitCode(1) }
    }

    private func wait(for id: WorkflowID, queue: JobQueue, deadline: ContinuousClock.Instant?, output: TerminalOutput)
        async throws
    {
        while true {
            guard let workflow = try await queue.workflow(id) else {
                output.endStatus()
                throw CLIError(
                    message: "no workflow with id \(id); list workflows with `jobq workflow list`", exitCode: .notFound)
            }
            if output.isTerminal { output.status(Self.bar(workflow.jobs)) }
            if workflow.state.isFinal {
                output.endStatus()
                print("workflow \(id) \(workflow.state.rawValue)" + (workflow.error.map { ": \($0)" } ?? ""))
                if workflow.state != .succeeded { throw ExitCode(1) }
                return
            }
            if let deadline, ContinuousClock.now >= deadline {
                output.endStatus()
                printError("timed out after \(timeout ?? ""): workflow \(id) is still running")
                throw ExitCode(124)
            }
            try await Task.sleep(for: .milliseconds(100))
        }
    }

    static func bar(_ jobs: [Job]) -> String {
        let done = jobs.filter(\.state.isFinal).count
        let fraction = jobs.map { $0.state.isFinal ? 1 : ($0.progress ?? 0) }.reduce(0, +) / Double(max(jobs.count, 1))
        let width = 30
        let filled = Int((fraction * Double(width)).rounded())
        let failed = jobs.filter { $0.state == .dead || $0.state == .cancelled }.count
        return "[" + String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled) + "] "
            + "\(done)/\(jobs.count) finished" + (failed > 0 ? ", \(failed) failed" : "")
            + String(format: " %3.0f%%", fraction * 100)
    }
}
