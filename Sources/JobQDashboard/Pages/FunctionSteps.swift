import Foundation
import JobQCore
import JobQWebText

extension Dashboard {
    /// A durable function's record on its job's page: each step, sleep, wait and call in the
    /// order its code reached them, with its state, time and result (the names and results are
    /// the user's: escaped, and results capped).
    static func stepsSection(_ steps: [FunctionStep], job: Job) -> String {
        guard !steps.isEmpty else { return "" }
        let rows = steps.enumerated().map { index, step in
            let (state, at) = step.standing(isLast: index == steps.count - 1, functionEnded: job.state.isFinal)
            let children = step.children.map(Pages.jobLink).joined(separator: " ")
            let result =
                step.resultJSON.map { "<code>\(HTML.escape(HTML.capped($0, limit: eventDataLimit)))</code>" } ?? ""
            return Pages.row([
                "\(step.position)", HTML.escape(step.kind.rawValue), HTML.escape(step.label), HTML.badge(state),
                HTML.time(at), children.isEmpty ? result : children + " " + result
            ])
        }
        return "<h2>Steps</h2>"
            + Pages.table(["#", "Kind", "Name", "State", "At", "Result"], rows, empty: "No steps recorded.")
    }
}
