import Foundation
import JobQCore
import JobQSQL

/// What a statement returned: its rows, and how many rows it changed.
package struct StatementResult: Sendable {
    package var names: [String]
    package var rows: [[SQLValue]]
    package var changes: Int

    package init(names: [String], rows: [[SQLValue]], changes: Int) {
        self.names = names
        self.rows = rows
        self.changes = changes
    }
}

/// Which of a server's connections for statements that commit on their own runs a statement:
/// a worker's claims never wait behind a burst of its process's enqueues, nor behind its
/// completions.
package enum AutocommitLine: Sendable {
    case enqueues
    case claims
    case completions
}
