import Foundation

extension FunctionStep {
    /// Where a recorded position stands, as `jobq show` and the dashboard say it: `done`,
    /// `sleeping`/`slept`, `waiting`/`received`/`timed out`, `returned`, `cancelled`, or
    /// `abandoned` (a wait or call of a function that ended meanwhile); and the time that goes
    /// with it (when it finished, or until when it sleeps or waits; nil for a call still waiting
    /// or a wait without a deadline).
    ///
    /// ```swift
    /// let (state, at) = step.standing(isLast: true, functionEnded: job.state.isFinal)
    /// ```
    package func standing(isLast: Bool, functionEnded: Bool, now: Date = Date()) -> (state: String, at: Date?) {
        if cancelled { return ("cancelled", finishedAt) }
        switch kind {
        case .step:
            return ("done", finishedAt ?? startedAt)
        case .sleep:
            let wake = wakeAt ?? startedAt
            return (isLast && wake > now && !functionEnded ? "sleeping" : "slept", wake)
        case .signal, .event:
            if let finishedAt { return (resultJSON == nil ? "timed out" : "received", finishedAt) }
            return (functionEnded ? "abandoned" : "waiting", wakeAt.flatMap { $0 >= FunctionRun.latestWake ? nil : $0 })
        case .call:
            if let finishedAt { return ("returned", finishedAt) }
            return (functionEnded ? "abandoned" : "waiting", nil)
        }
    }

    /// The name as `jobq show` and the dashboard say it: an event wait's filter after its
    /// event's name (`order.paid where /order = 42`).
    package var label: String { filter.map { "\(name) where \($0)" } ?? name }
}
