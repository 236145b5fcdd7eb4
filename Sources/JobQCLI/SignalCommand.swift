import ArgumentParser
import Foundation
import JobQCommandLine
import JobQCore

struct SignalCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "signal",
        abstract: "Send a signal to a job: a durable function waiting for it (context.waitForSignal) resumes; one "
            + "that has not reached its wait yet takes it when it does.",
        discussion: """
              jobq signal 42 approved --payload '{"user": "ada"}'
              jobq signal 42 cancel-requested
            """)

    @OptionGroup var store: StoreOptions
    @Argument(help: "The job's id.") var id: Int64
    @Argument(help: "The signal's name, as the function waits for it.") var name: String
    @Option(help: ArgumentHelp("The signal's payload, as JSON (a string is quoted: '\"yes\"').", valueName: "json"))
    var payload: String?

    func run() async throws {
        let receipt = try await store.open().signal(job: id, name: name, payloadJSON: payload)
        if receipt.wokeJob {
            print("signal \(receipt.id) '\(name)' sent to job \(id); the job was waiting for it and is ready now")
        } else {
            print(
                "signal \(receipt.id) '\(name)' sent to job \(id); it is kept until the job waits for '\(name)'")
        }
    }
}

/// How `jobq show` lists a durable function's record.
enum FunctionStepsTable {
    static func render(_ steps: [FunctionStep], jobState: JobState) -> String {
        var rows: [[String]] = [["#", "kind", "name", "state", "at", "result"]]
        for (index, step) in steps.enumerated() {
            let (state, at) = step.standing(isLast: index == steps.count - 1, functionEnded: jobState.isFinal)
            let when: String
            switch (state, at) {
            case ("sleeping", let at?), ("slept", let at?), ("waiting", let at?): when = "until " + isoString(at)
            case (_, let at?): when = isoString(at)
            case ("waiting", nil) where step.kind == .call:
                when = "jobs " + step.children.map(String.init).joined(separator: ",")
            default: when = "no timeout"
            }
            let result = step.resultJSON.map { $0.count > 60 ? String($0.prefix(57)) + "..." : $0 } ?? "-"
            rows.append([String(step.position), step.kind.rawValue, step.label, state, when, result])
        }
        return Table.render(rows)
    }
}
