import Foundation
import JobQCore

/// The record of users' data migrations.
extension SQLStore {
    package func dataMigrationVersion(_ name: String) async throws -> Int? {
        try await read { db in
            try db.fetchOne(Int.self, sql: "SELECT version FROM jobq_data_migrations WHERE name = ?", arguments: [name])
        }
    }

    package func dataMigrators() async throws -> [DataMigratorStatus] {
        try await read { db in try StoreSQL.dataMigrators(db) }
    }

    /// Notes the target the code asks for, so that status can show how far behind the data is.
    package func noteDataMigrationTarget(_ name: String, target: Int) async throws {
        let now = StoreSQL.now()
        try await write { db in
            try db.execute(
                sql:
                    "UPDATE jobq_data_migrations SET target_version = \(RetargetDataMigration.target), updated_at = \(RetargetDataMigration.now) WHERE name = \(RetargetDataMigration.name)",
                arguments: RetargetDataMigration.arguments([.target: target, .now: now, .name: name]))
        }
    }

    /// Records step `version` of migrator `name` as done if the recorded version is the one
    /// before it (or nothing is recorded, for `initialized`), and runs `changes` in the same
    /// transaction. Returns nil, with nothing changed, when another run already recorded it.
    /// Enqueues `next` in the same transaction, so a background chain never loses its next step.
    package func recordDataMigrationStep<T: Sendable>(
        name: String, version: Int, outcome: String, target: Int, next: JobRequest?,
        changes: @escaping @Sendable (DataMigrationTransaction) throws -> T
    ) async throws -> T? {
        try await write { db -> T? in
            guard
                try StoreSQL.recordDataMigrationStep(
                    db, name: name, version: version, outcome: outcome, target: target, next: next)
            else { return nil }
            return try changes(DataMigrationTransaction(db))
        }
    }

    /// The unfinished background job of migrator `name`, if a chain is in progress.
    package func unfinishedDataMigrationJob(_ name: String) async throws -> JobID? {
        try await read { db in
            try db.fetchOne(
                JobID.self,
                sql: """
                    SELECT id FROM jobq_jobs WHERE executor = ? AND state IN ('scheduled', 'ready', 'running', 'failed')
                    AND \(db.dialect.jsonText("payload", key: "migrator")) = ? ORDER BY id LIMIT 1
                    """,
                arguments: [DataMigrationStep.executorName, name])
        }
    }
}

extension StoreSQL {
    package static func dataMigrators(_ db: some SQLTransaction) throws -> [DataMigratorStatus] {
        return try db.fetchRows(sql: "SELECT * FROM jobq_data_migrations ORDER BY name").map { row in
            DataMigratorStatus(
                name: row["name"], version: row["version"], targetVersion: row["target_version"],
                updatedAt: Date(timeIntervalSince1970: row["updated_at"]))
        }
    }

    static func recordDataMigrationStep(
        _ db: some SQLTransaction, name: String, version: Int, outcome: String, target: Int, next: JobRequest?
    ) throws -> Bool {
        let now = Self.now()
        let recorded = try db.fetchOne(
            Int.self, sql: "SELECT version FROM jobq_data_migrations WHERE name = ?", arguments: [name])
        if outcome == "initialized" {
            guard recorded == nil else { return false }
            try db.execute(
                sql: """
                    INSERT INTO jobq_data_migrations (name, version, target_version, initialized_at, updated_at)
                    VALUES (\(RecordDataMigration.name), \(RecordDataMigration.version), \(RecordDataMigration.target), \(RecordDataMigration.now), \(RecordDataMigration.now))
                    """,
                arguments: RecordDataMigration.arguments([.name: name, .version: version, .target: target, .now: now]))
        } else {
            guard let recorded, recorded == version - 1 else { return false }
            try db.execute(
                sql:
                    "UPDATE jobq_data_migrations SET version = \(AdvanceDataMigration.version), target_version = \(AdvanceDataMigration.target), updated_at = \(AdvanceDataMigration.now) WHERE name = \(AdvanceDataMigration.name)",
                arguments: AdvanceDataMigration.arguments([.version: version, .target: target, .now: now, .name: name]))
        }
        try db.execute(
            sql:
                "INSERT INTO jobq_data_migration_steps (name, version, outcome, applied_at) VALUES (\(RecordDataMigrationStep.name), \(RecordDataMigrationStep.version), \(RecordDataMigrationStep.outcome), \(RecordDataMigrationStep.appliedAt))",
            arguments: RecordDataMigrationStep.arguments([
                .name: name, .version: version, .outcome: outcome, .appliedAt: now
            ]))
        if let next { _ = try insert(next, db: db, now: now) }
        return true
    }
}

/// A data migration step runs its statements in the store's own transaction.
extension SQLTransaction {
    package var storeKind: DataMigrationTransaction.StoreKind {
        switch dialect {
        case .sqlite: .sqlite
        case .postgres: .postgresql
        }
    }

    package func execute(_ sql: String, _ arguments: [DataMigrationValue]) throws -> Int {
        try execute(sql: sql, arguments: SQLArguments(arguments.map(\.sqlValue)))
        return changesCount
    }

    package func rows(_ sql: String, _ arguments: [DataMigrationValue]) throws -> [DataMigrationRow] {
        try fetchRows(sql: sql, arguments: SQLArguments(arguments.map(\.sqlValue))).map {
            DataMigrationRow(columns: $0.names, values: $0.values)
        }
    }
}

/// A data migrator's new target.
private enum RetargetDataMigration: Int32, SQLParameter, CaseIterable {
    case target = 1
    case now, name
}

/// A data migrator's first record.
private enum RecordDataMigration: Int32, SQLParameter, CaseIterable {
    case name = 1
    case version, target, now
}

/// A data migrator's progress.
private enum AdvanceDataMigration: Int32, SQLParameter, CaseIterable {
    case version = 1
    case target, now, name
}

/// One step of a data migrator.
private enum RecordDataMigrationStep: Int32, SQLParameter, CaseIterable {
    case name = 1
    case version, outcome, appliedAt
}
