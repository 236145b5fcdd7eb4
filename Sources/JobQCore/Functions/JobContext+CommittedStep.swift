import Foundation

/// The frame of a step whose record commits in the application's own database transaction,
/// with the rows the step writes there: exactly once for those rows, where a plain step is at
/// least once. The stores supply the transaction (`step(_:in:_:)` in JobQSQLite, on a GRDB
/// writer of the store's file; in JobQPostgres, on a postgres-nio connection to the store's
/// database); the rules of a step (its position, replay, names, errors) are these, once.
extension JobContext {
    /// What a store's transaction needs to record the step: the function's store, the worker,
    /// and the record of the step for the value its body returned.
    package struct CommittedStep: Sendable {
        package let store: any FunctionStore
        package let workerID: String
        let job: ClaimedJob
        let position: Int
        let name: String
        let attempt: Int
        let started: Date

        /// The step's record for `value`, finished now; throws (a ``NonRetryableError`` naming
        /// the step) when the value does not encode or holds what jobq does not store.
        package func record(_ value: some Encodable) throws -> StepRecord {
            StepRecord(
                job: job,
                step: FunctionStep(
                    position: position, name: name, kind: .step,
                    resultJSON: try JobContext.stepResultJSON(value, step: name), wakeAt: nil, attempt: attempt,
                    startedAt: started, finishedAt: Date()))
        }
    }

    /// Runs a step whose record the store writes in the application's transaction: on a replay
    /// that finds it recorded, returns the recorded result without calling `transaction`;
    /// otherwise, once the steps this run recorded before it and the attempt's start are
    /// written (its record commits after theirs), calls `transaction`, which runs the body and
    /// commits the record with it. Errors of the body reach here as ``StepBodyFailed`` and
    /// fail the attempt with the step named (``FunctionStepFailed``), as a plain step's do.
    package func committedStep<T: Codable & Sendable>(
        _ name: String, _ transaction: (CommittedStep) async throws -> T
    ) async throws -> T {
        let run = try functionRun()
        let (position, recorded) = try await run.begin(.step, name)
        if let recorded {
            run.advance()
            return try Self.decode(T.self, recorded.resultJSON ?? "null", what: "the recorded result of step '\(name)'")
        }
        let frame = CommittedStep(
            store: run.store, workerID: run.workerID, job: run.job, position: position, name: name, attempt: attempt,
            started: Date())
        let value: T
        do {
            try await run.settleRecords()
            await run.startWritten()
            value = try await transaction(frame)
        } catch let failed as StepBodyFailed {
            run.abandonStep()
            if failed.underlying is FunctionPark { throw failed.underlying }
            throw FunctionStepFailed(step: name, underlying: failed.underlying)
        } catch {
            run.abandonStep()
            throw error
        }
        run.advance()
        return value
    }
}

/// What a committed step's body threw, carried out of the store's transaction (which it rolls
/// back) to ``JobContext/committedStep(_:_:)``, which names the step.
package struct StepBodyFailed: Error, Sendable {
    package let underlying: any Error
    package init(_ underlying: any Error) { self.underlying = underlying }
}
