import Foundation

/// What one sweep of overdue jobs did (``JobStore/expireOverdueJobs(skipping:)``).
package struct ExpirySweep: Sendable, Equatable {
    /// Jobs ended as expired.
    package var ended = 0
    /// Jobs the store refused to end for good (their own data, or a trigger of the app's
    /// sharing the database, fails the transaction), with the error: left as they are, so that
    /// they hold up no other job's expiry. A caller passes them to later sweeps to skip.
    package var refused: [JobID: String] = [:]

    package init() {}
}
