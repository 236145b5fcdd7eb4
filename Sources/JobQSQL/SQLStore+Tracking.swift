import Foundation
import JobQCore

/// Tracking sets: the firing is decided in the transaction that records a member's result.
extension SQLStore {
    package func addTrackingSet(_ name: String, members: [TrackingMember]) async throws -> TrackingSetStatus {
        try Label.check(name, what: "a tracking set's name")
        guard !members.isEmpty else { throw JobQueueError.invalidInput("a tracking set needs at least one member") }
        let now = StoreSQL.now()
        return try await write { db in
            if try db.fetchOne(
                Bool.self, sql: "SELECT EXISTS (SELECT 1 FROM jobq_tracking_sets WHERE name = ?)", arguments: [name])
                == true
            {
                throw JobQueueError.invalidState(
                    "tracking set '\(name)' already exists; remove it first or pick another name")
            }
            try db.execute(
                sql: "INSERT INTO jobq_tracking_sets (name, created_at) VALUES (?, ?)", arguments: [name, now])
            for member in Set(members) {
                try db.execute(
                    sql:
                        "INSERT INTO jobq_tracking_members (set_name, kind, member) VALUES (\(AddTrackingMember.set), \(AddTrackingMember.kind), \(AddTrackingMember.member))",
                    arguments: AddTrackingMember.arguments([.set: name, .kind: member.kind, .member: member.key]))
            }
            return try StoreSQL.trackingSets(db, name: name)[0]
        }
    }

    package func removeTrackingSet(_ name: String) async throws {
        try await write { db in
            try db.execute(sql: "DELETE FROM jobq_tracking_members WHERE set_name = ?", arguments: [name])
            try db.execute(sql: "DELETE FROM jobq_tracking_sets WHERE name = ?", arguments: [name])
            guard db.changesCount == 1 else {
                throw JobQueueError.notFound("no tracking set named '\(name)'; see `jobq track list`")
            }
        }
    }

    package func trackingSets() async throws -> [TrackingSetStatus] {
        try await read { db in try StoreSQL.trackingSets(db, name: nil) }
    }
}

extension StoreSQL {
    static func trackingSets(_ db: some SQLTransaction, name: String?) throws -> [TrackingSetStatus] {
        let sets = try db.fetchRows(
            sql: "SELECT * FROM jobq_tracking_sets WHERE CAST(? AS text) IS NULL OR name = ? ORDER BY name",
            arguments: [name, name])
        return try sets.map { row in
            let setName: String = row["name"]
            let members = try db.fetchRows(
                sql: "SELECT kind, member, fresh FROM jobq_tracking_members WHERE set_name = ? ORDER BY kind, member",
                arguments: [setName])
            func label(_ member: SQLRow) -> String {
                (member["kind"] as String) == "job" ? "job:\(member["member"] as String)" : member["member"]
            }
            return TrackingSetStatus(
                name: setName, members: members.map(label), fresh: members.filter { $0["fresh"] as Bool }.map(label),
                round: row["round"], createdAt: Date(timeIntervalSince1970: row["created_at"]))
        }
    }

    private enum MemberSucceeded: Int32, SQLParameter {
        case job = 1
        case result, executor, name
    }

    /// Marks the members a success counts for (its executor, or its job name) with its result.
    private static let memberSucceededSQL: String = {
        typealias P = MemberSucceeded
        return """
            UPDATE jobq_tracking_members SET fresh = 1, latest_job_id = \(P.job), latest_result = \(P.result)
            WHERE (kind = 'executor' AND member = \(P.executor)) OR (kind = 'job' AND member = \(P.name))
            RETURNING set_name
            """
    }()

    /// Marks the members this job's success counts for, and fires every set whose members all
    /// have a new result: one round, once, because this transaction holds the write lock.
    static func trackingMemberSucceeded(
        _ db: some SQLTransaction, job: JobID, executor: String, name: String?, resultJSON: String, now: Double
    ) throws {
        typealias P = MemberSucceeded
        let update = try db.statement(sql: memberSucceededSQL)
        update.bind(P.job, job)
        update.bind(P.result, resultJSON)
        update.bind(P.executor, executor)
        update.bind(P.name, name)
        var sets: Set<String> = []
        while try update.step() { sets.insert(update.string(0)) }
        update.reset()
        for set in sets.sorted() {
            let waiting =
                try db.fetchOne(
                    Int.self, sql: "SELECT COUNT(*) FROM jobq_tracking_members WHERE set_name = ? AND fresh = 0",
                    arguments: [set]) ?? 0
            guard waiting == 0 else { continue }
            let round =
                try db.fetchOne(
                    Int.self, sql: "UPDATE jobq_tracking_sets SET round = round + 1 WHERE name = ? RETURNING round",
                    arguments: [set]) ?? 0
            let results = jsonObject(
                try db.fetchRows(
                    sql: """
                        SELECT CASE kind WHEN 'job' THEN 'job:' || member ELSE member END AS name, latest_result
                        FROM jobq_tracking_members WHERE set_name = ? ORDER BY kind, member
                        """,
                    arguments: [set]
                ).map { ($0["name"], ($0["latest_result"] as String?).map(JSONText.minified)) })
            try db.execute(sql: "UPDATE jobq_tracking_members SET fresh = 0 WHERE set_name = ?", arguments: [set])
            appendEvent(
                db, .tracking(set: set, round: round, rawResults: results), job: job, queue: nil, executor: nil,
                batch: nil, now: now)
        }
    }
}

/// A member of a tracking set.
private enum AddTrackingMember: Int32, SQLParameter, CaseIterable {
    case set = 1
    case kind, member
}
