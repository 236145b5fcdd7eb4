import Foundation
import Synchronization

/// A data migrator with its type erased, so a pool can hold several and find them by name.
struct ErasedDataMigrator: Sendable {
    let name: String
    let targetVersion: Int
    let initialize: @Sendable (DataMigrationContext) async throws -> Void
    let needsMigration: @Sendable (Int, DataMigrationContext) async throws -> Bool
    let migrate: @Sendable (Int, DataMigrationContext) async throws -> Void

    init<M: DataMigrator>(_ migrator: M) {
        name = M.name
        targetVersion = M.targetVersion
        initialize = { try await migrator.initialize($0) }
        needsMigration = { try await migrator.needsMigration(to: $0, context: $1) }
        migrate = { try await migrator.migrate(to: $0, context: $1) }
    }

    package func validate() throws(JobQueueError) {
        try Label.check(name, what: "a data migrator's name")
        guard targetVersion >= 1 else {
            throw .invalidInput("data migrator '\(name)' has targetVersion \(targetVersion); it must be at least 1")
        }
    }
}

/// Records one step: inside the step's own transaction when it uses `context.write`, or right
/// after the step returns otherwise.
final class StepRecorder: Sendable {
    let store: any Store
    let name: String
    let version: Int
    let target: Int
    /// The background job for the following step, enqueued with the record.
    let next: JobRequest?
    let isInitialization: Bool
    /// nil until recorded; true when this run recorded it, false when another run had.
    private let recorded = Mutex<Bool?>(nil)
    private let writeUsed = Mutex(false)

    init(store: any Store, name: String, version: Int, target: Int, next: JobRequest?, isInitialization: Bool) {
        self.store = store
        self.name = name
        self.version = version
        self.target = target
        self.next = next
        self.isInitialization = isInitialization
    }

    func recordWithChanges<T: Sendable>(_ body: @escaping @Sendable (DataMigrationTransaction) throws -> T) async throws
        -> T
    {
        let firstUse = writeUsed.withLock { used in
            defer { used = true }
            return !used
        }
        guard firstUse else {
            throw JobQueueError.invalidState(
                "data migration '\(name)' step \(version) called context.write twice; do all of a step's store changes in one write"
            )
        }
        let outcome = isInitialization ? "initialized" : "migrated"
        let result = try await store.recordDataMigrationStep(
            name: name, version: version, outcome: outcome, target: target, next: next, changes: body)
        recorded.withLock { $0 = result != nil }
        guard let result else {
            throw JobQueueError.invalidState(
                "data migration '\(name)' step \(version) was already recorded by another run; its changes were rolled back"
            )
        }
        return result
    }

    /// Records the step unless `context.write` already did. Returns the outcome recorded, or
    /// nil when another run had recorded it.
    func finish(skipped: Bool) async throws -> String? {
        if let done = recorded.withLock({ $0 }) { return done ? "migrated" : nil }
        let outcome = isInitialization ? "initialized" : (skipped ? "skipped" : "migrated")
        let didRecord =
            try await store.recordDataMigrationStep(
                name: name, version: version, outcome: outcome, target: target, next: next, changes: { _ in true })
            != nil
        return didRecord ? outcome : nil
    }
}

extension JobQueue {
    /// Brings a data migrator's data to its ``DataMigrator/targetVersion``.
    ///
    /// With `waitUntilDone: true` (the default) the steps run now, in this task, and the report
    /// says what ran. With `false`, each step runs as a durable job on `queue`, chained so they
    /// run in order: the record of step N and the job for step N+1 are written in one
    /// transaction, so a crash anywhere resumes at the step that was interrupted. A
    /// ``WorkerPool`` that lists the migrator in `migrators:` runs them.
    ///
    /// ```swift
    /// let report = try await queue.runDataMigration(NotesMigrator())
    /// print(report.migrated)  // [2, 3]
    /// ```
    @discardableResult
    public func runDataMigration<M: DataMigrator>(
        _ migrator: M, waitUntilDone: Bool = true, queue: String = JobOptions.defaultQueue
    ) async throws -> DataMigrationReport {
        let erased = ErasedDataMigrator(migrator)
        try erased.validate()
        if !waitUntilDone {
            return try await enqueueDataMigration(erased, queue: queue)
        }
        let recorded = try await store.dataMigrationVersion(erased.name)
        var report = DataMigrationReport(
            migrator: erased.name, fromVersion: recorded, toVersion: recorded ?? 0, targetVersion: erased.targetVersion,
            initialized: false, migrated: [], skipped: [], jobID: nil)
        guard let recorded else {
            let outcome = try await runDataMigrationStep(erased, step: 0, background: false, nextOn: nil)
            report.initialized = outcome == "initialized"
            report.toVersion = try await store.dataMigrationVersion(erased.name) ?? 0
            return report
        }
        try checkNotNewer(erased, recorded: recorded)
        if recorded < erased.targetVersion {
            try await store.noteDataMigrationTarget(erased.name, target: erased.targetVersion)
        }
        for step in stride(from: recorded + 1, through: erased.targetVersion, by: 1) {
            let outcome = try await runDataMigrationStep(erased, step: step, background: false, nextOn: nil)
            if outcome == "migrated" { report.migrated.append(step) }
            if outcome == "skipped" { report.skipped.append(step) }
            report.toVersion = step
        }
        return report
    }

    /// The recorded state of every data migrator in this store.
    public func dataMigrators() async throws -> [DataMigratorStatus] {
        try await store.dataMigrators()
    }

    private func enqueueDataMigration(_ migrator: ErasedDataMigrator, queue: String) async throws -> DataMigrationReport
    {
        let recorded = try await store.dataMigrationVersion(migrator.name)
        var report = DataMigrationReport(
            migrator: migrator.name, fromVersion: recorded, toVersion: recorded ?? 0,
            targetVersion: migrator.targetVersion,
            initialized: false, migrated: [], skipped: [], jobID: nil)
        if let recorded {
            try checkNotNewer(migrator, recorded: recorded)
            if recorded >= migrator.targetVersion { return report }
            try await store.noteDataMigrationTarget(migrator.name, target: migrator.targetVersion)
        }
        if let running = try await store.unfinishedDataMigrationJob(migrator.name) {
            report.jobID = running
            return report
        }
        let first = recorded.map { $0 + 1 } ?? 0
        report.jobID = try await enqueue(try Self.dataMigrationStepRequest(migrator.name, step: first, queue: queue)).id
        return report
    }

    static func dataMigrationStepRequest(_ name: String, step: Int, queue: String) throws(JobQueueError) -> JobRequest {
        let payload = "{\"migrator\":\(JSONText.string(name)),\"step\":\(step)}"
        return try JobRequest(
            executor: DataMigrationStep.executorName, payloadJSON: payload, options: JobOptions(queue: queue))
    }

    private func checkNotNewer(_ migrator: ErasedDataMigrator, recorded: Int) throws(JobQueueError) {
        guard recorded <= migrator.targetVersion else {
            throw .incompatibleStore(
                "data of '\(migrator.name)' is at version \(recorded), newer than this code's target \(migrator.targetVersion); upgrade the program"
            )
        }
    }

    /// Runs step `step` (0: initialize) if the recorded version is right before it. Returns the
    /// outcome recorded ("initialized", "migrated", "skipped") or "already done".
    func runDataMigrationStep(_ migrator: ErasedDataMigrator, step: Int, background: Bool, nextOn queue: String?)
        async throws -> String
    {
        let recorded = try await store.dataMigrationVersion(migrator.name)
        let target = migrator.targetVersion
        if step == 0 {
            if recorded != nil { return "already done" }
        } else {
            guard let recorded else {
                throw NonRetryableError(
                    "data migration '\(migrator.name)' step \(step) cannot run: the migrator was never initialized")
            }
            if recorded >= step { return "already done" }
            guard recorded == step - 1 else {
                throw NonRetryableError(
                    "data migration '\(migrator.name)' step \(step) cannot run: the data is at version \(recorded)")
            }
            guard step <= target else {
                throw NonRetryableError(
                    "data migration '\(migrator.name)' step \(step) is past this code's target \(target)")
            }
        }
        let version = step == 0 ? target : step
        var next: JobRequest?
        if let queue, step != 0, step < target {
            next = try Self.dataMigrationStepRequest(migrator.name, step: step + 1, queue: queue)
        }
        let recorder = StepRecorder(
            store: store, name: migrator.name, version: version, target: target, next: next, isInitialization: step == 0
        )
        let context = DataMigrationContext(
            migrator: migrator.name, version: version, isBackground: background, recorder: recorder)
        var skipped = false
        if step == 0 {
            try await migrator.initialize(context)
        } else if try await migrator.needsMigration(step, context) {
            try await migrator.migrate(step, context)
        } else {
            skipped = true
        }
        let outcome = try await recorder.finish(skipped: skipped)
        if next != nil { wakeWorkers() }
        return outcome ?? "already done"
    }
}

/// The executor that runs one background data migration step.
enum DataMigrationStepExecutor {
    struct Input: Codable {
        var migrator: String
        var step: Int
    }

    static func make(queue: JobQueue, migrators: [ErasedDataMigrator]) -> ErasedExecutor {
        let registry = Dictionary(migrators.map { ($0.name, $0) }, uniquingKeysWith: { $1 })
        return ErasedExecutor(name: DataMigrationStep.executorName) { payloadJSON, context in
            let input: Input
            do {
                input = try JSONDecoder().decode(Input.self, from: Data(payloadJSON.utf8))
            } catch {
                throw PayloadDecodingError(executor: DataMigrationStep.executorName, underlying: error)
            }
            guard let migrator = registry[input.migrator] else {
                throw ExecutorFailure(
                    "no data migrator named '\(input.migrator)' is registered in this worker pool (registered: "
                        + (registry.keys.sorted().joined(separator: ", ").nonEmpty ?? "none")
                        + "); pass it in WorkerPool(migrators:)")
            }
            // Each step reports where the chain is, so `jobq events --kind progress` and
            // `jobq wait` show a data migration moving.
            let target = max(migrator.targetVersion, 1)
            let label = input.step == 0 ? "initialize" : "step \(input.step) of \(target)"
            try await context.progress(
                Double(max(input.step - 1, 0)) / Double(target), message: "\(migrator.name): \(label)")
            let outcome = try await queue.runDataMigrationStep(
                migrator, step: input.step, background: true, nextOn: context.queue)
            try await context.progress(
                input.step == 0 ? 1 : Double(input.step) / Double(target),
                message: "\(migrator.name): \(label) \(outcome)")
            return
                "{\"migrator\":\(JSONText.string(input.migrator)),\"step\":\(input.step),\"outcome\":\(JSONText.string(outcome))}"
        }
    }
}

extension String {
    var nonEmpty: String? { isEmpty ? nil : self }
}
