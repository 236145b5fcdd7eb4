import Foundation

/// What a pause stops claims of: one queue's jobs, one executor's jobs in every queue, or every
/// job of the store.
///
/// ```swift
/// try await queue.pause(executor: "mail")   // PauseTarget.executor("mail")
/// ```
package enum PauseTarget: Sendable, Hashable {
    case queue(String)
    case executor(String)
    case all
}

/// The executors paused in every queue, and whether everything is: what a worker reads to hand
/// back the jobs of paused executors it claimed ahead before the pause.
package struct PausedClaims: Sendable, Hashable {
    package var all: Bool
    package var executors: Set<String>

    package init(all: Bool, executors: Set<String>) {
        self.all = all
        self.executors = executors
    }

    package var pausesAnything: Bool { all || !executors.isEmpty }

    package func holds(_ executor: String) -> Bool { all || executors.contains(executor) }
}

/// A payload member with an index of its own (``JobQueue/addPayloadIndex(_:)``).
public struct PayloadIndex: Sendable, Hashable, Codable {
    /// The member, as a JSON pointer: `/customer`.
    public var pointer: String
    public var createdAt: Date

    package init(pointer: String, createdAt: Date) {
        self.pointer = pointer
        self.createdAt = createdAt
    }
}

/// An executor whose jobs no worker claims (``JobQueue/pause(executor:)``), and since when.
public struct PausedExecutor: Sendable, Hashable, Codable {
    public var name: String
    public var since: Date

    package init(name: String, since: Date) {
        self.name = name
        self.since = since
    }
}
