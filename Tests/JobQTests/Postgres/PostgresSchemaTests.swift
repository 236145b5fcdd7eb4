import Foundation
import JobQ
import PostgresNIO
import Testing

@testable import JobQCore
@testable import JobQPostgres
@testable import JobQSQL

/// The numbered migrator on PostgreSQL: applied once, in order, atomically, under an advisory
/// lock; newer and edited schemas refused.
@Suite("PostgreSQL schema", .enabled(if: PostgresTestServer.available, PostgresTestServer.skipReason))
struct PostgresSchemaTests {
    @Test func aNewDatabaseGetsEveryMigrationOnceAndAgainNothing() async throws {
        try await PostgresTestServer.withFreshDatabase { settings in
            #expect(try await PostgresSchema.version(settings) == 0)
            let first = try await PostgresSchema.migrate(settings, logger: PostgresTestServer.logger)
            #expect(first.fromVersion == 0 && first.toVersion == PostgresSchema.latestVersion)
            #expect(first.applied == PostgresMigration.postgres.map(\.name))
            let again = try await PostgresSchema.migrate(settings, logger: PostgresTestServer.logger)
            #expect(again.applied.isEmpty && again.fromVersion == PostgresSchema.latestVersion)
            let tables = try await PostgresTestServer.rows(
                settings, "SELECT tablename FROM pg_tables WHERE schemaname = 'jobq' ORDER BY tablename",
                as: String.self)
            for table in [
                "jobs", "events", "workflows", "workflow_groups", "trees", "tree_nodes", "schedules", "triggers",
                "schema_migrations"
            ] {
                #expect(tables.contains(table), "missing table \(table)")
            }
        }
    }

    /// An application's own tables in `public`, named as jobq's were (`schema_migrations` with
    /// the same columns, not jobq's rows): jobq's store goes in its own schema and leaves them be.
    @Test func theAppsTablesInPublicAreLeftAlone() async throws {
        try await PostgresTestServer.withFreshDatabase { settings in
            for statement in [
                "CREATE TABLE public.jobs (id bigserial PRIMARY KEY, title text NOT NULL)",
                "INSERT INTO public.jobs (title) VALUES ('plumber'), ('painter')",
                "CREATE TABLE public.events (id bigserial PRIMARY KEY, name text)",
                "INSERT INTO public.events (name) VALUES ('launch')",
                "CREATE TABLE public.workers (name text PRIMARY KEY, queues text)",
                "INSERT INTO public.workers VALUES ('ann', 'day')",
                """
                CREATE TABLE public.schema_migrations (
                    version integer PRIMARY KEY, name text NOT NULL, checksum text NOT NULL, applied_at double precision)
                """,
                "INSERT INTO public.schema_migrations VALUES (1, 'create_users', 'abc', 0), (2, 'add_orders', 'def', 0)"
            ] {
                try await PostgresTestServer.execute(settings, statement)
            }
            func appRows() async throws -> [String] {
                try await PostgresTestServer.rows(
                    settings,
                    """
                    SELECT 'jobs ' || id || ' ' || title FROM public.jobs UNION ALL
                    SELECT 'events ' || id || ' ' || name FROM public.events UNION ALL
                    SELECT 'workers ' || name || ' ' || queues FROM public.workers UNION ALL
                    SELECT 'migrations ' || version || ' ' || name || ' ' || checksum FROM public.schema_migrations
                    ORDER BY 1
                    """, as: String.self)
            }
            let before = try await appRows()
            #expect(before.count == 6)
            #expect(try await PostgresSchema.version(settings) == 0, "the app's schema_migrations is not jobq's")
            let queue = try await JobQueue(postgres: settings, logger: PostgresTestServer.logger)
            let job = try await queue.enqueue(Sum.self, .init(a: 2, b: 3))
            try await WorkerPool(queue: queue, executors: [Sum()], options: quickOptions()).run()
            #expect(try await queue.job(job.id)?.state == .succeeded)
            #expect(try await appRows() == before)
            let publicTables = try await PostgresTestServer.rows(
                settings, "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1", as: String.self)
            #expect(publicTables == ["events", "jobs", "schema_migrations", "workers"])
            #expect(
                try await PostgresTestServer.rows(
                    settings, "SELECT count(*) FROM pg_tables WHERE schemaname = 'jobq'", as: Int.self) == [
                        StoreTables.names.count
                    ])
        }
    }

    /// A schema of the user's choosing, with a name that needs quoting, beside the default one:
    /// two stores in one database, each with its own jobs.
    @Test func twoStoresInTwoSchemasOfOneDatabase() async throws {
        try await PostgresTestServer.withFreshDatabase { settings in
            var other = settings
            other.schema = #"Tenant "B""#
            let first = try await JobQueue(postgres: settings, logger: PostgresTestServer.logger)
            let second = try await JobQueue(postgres: other, logger: PostgresTestServer.logger)
            let a = try await first.enqueue(Sum.self, .init(a: 1, b: 1))
            _ = try await second.enqueue(Sum.self, .init(a: 2, b: 2))
            _ = try await second.enqueue(Sum.self, .init(a: 3, b: 3))
            #expect(try await first.jobs().count == 1)
            #expect(try await second.jobs().count == 2)
            try await WorkerPool(queue: second, executors: [Sum()], options: quickOptions()).run()
            #expect(try await first.job(a.id)?.state == .ready, "the other store's workers leave it alone")
            #expect(try await second.jobs(state: .succeeded).count == 2)
            let schemas = try await PostgresTestServer.rows(
                settings, "SELECT DISTINCT schemaname FROM pg_tables WHERE tablename = 'jobs' ORDER BY 1",
                as: String.self)
            #expect(schemas == [#"Tenant "B""#, "jobq"])
        }
    }

    /// A store made in `public` on purpose (`?schema=public`) is that process's store: opening
    /// the database with the default schema, or with another, leaves it where it is, and its
    /// jobs run and succeed there (an earlier jobq moved it into the other schema, and its
    /// success function, still reading `public`, killed every job).
    @Test func aStoreMadeInPublicStaysThereWhateverElseOpensTheDatabase() async throws {
        try await PostgresTestServer.withFreshDatabase { settings in
            let logger = PostgresTestServer.logger
            var inPublic = settings
            inPublic.schema = "public"
            var other = settings
            other.schema = "other"
            let store = try await JobQueue(postgres: inPublic, logger: logger)
            let job = try await store.enqueue(Sum.self, .init(a: 2, b: 3))
            let byDefault = try await JobQueue(postgres: settings, logger: logger)
            let byOther = try await JobQueue(postgres: other, logger: logger)
            let defaultJobs = try await byDefault.jobs()
            let otherJobs = try await byOther.jobs()
            #expect(defaultJobs.isEmpty && otherJobs.isEmpty, "new, empty stores of their own")
            let reopened = try await JobQueue(postgres: inPublic, logger: logger)
            #expect(try await reopened.jobs().map(\.id) == [job.id], "the job is where it was enqueued")
            try await WorkerPool(queue: reopened, executors: [Sum()], options: quickOptions()).run()
            let done = try #require(try await reopened.job(job.id))
            #expect(done.state == .succeeded, "\(done.error ?? "")")
            #expect(try await PostgresSchema.version(inPublic) == PostgresSchema.latestVersion)
        }
    }

    /// Two stores in two schemas of one database share no lock: a unique enqueue (a write that
    /// takes its store's lock exclusively) on one goes through while a transaction holds the
    /// other's lock; and each store's functions name its own lock and channels.
    @Test func storesInTwoSchemasShareNoLockAndNoChannel() async throws {
        try await PostgresTestServer.withFreshDatabase { settings in
            let logger = PostgresTestServer.logger
            var second = settings
            second.schema = "second"
            let first = try await JobQueue(postgres: settings, logger: logger)
            let other = try await JobQueue(postgres: second, logger: logger)
            _ = try await first.enqueue(Sum.self, .init(a: 1, b: 1))
            for names in [settings.schemaNames, second.schemaNames] {
                let own = try await PostgresTestServer.rows(
                    settings,
                    "SELECT \(names.quotedSchema).jobq_write_lock_key(), \(names.quotedSchema).jobq_work_channel(), "
                        + "\(names.quotedSchema).jobq_events_channel()",
                    as: (Int64, String, String).self)
                #expect(own.first?.0 == names.writeLockKey)
                #expect(own.first?.1 == names.workChannel && own.first?.2 == names.eventsChannel)
            }
            #expect(settings.schemaNames.writeLockKey != second.schemaNames.writeLockKey)
            #expect(settings.schemaNames.workChannel != second.schemaNames.workChannel)
            #expect(settings.schemaNames.eventsChannel != second.schemaNames.eventsChannel)

            let holder = try await PostgresConnector(settings: settings, logger: logger).connect()
            defer { Task { try? await holder.close() } }
            try await holder.query("BEGIN", logger: logger)
            try await holder.query(
                PostgresQuery(unsafeSQL: "SELECT pg_advisory_xact_lock(\(settings.schemaNames.writeLockKey))"),
                logger: logger)
            let started = ContinuousClock.now
            var options = JobOptions()
            options.unique = UniqueKey("only-one")
            _ = try await other.enqueue(Sum.self, .init(a: 2, b: 2), options: options)
            let took = ContinuousClock.now - started
            try await holder.query("ROLLBACK", logger: logger)
            #expect(took < .seconds(2), "the other store's lock held it up for \(took)")
        }
    }

    /// A store made before schemas, in `public` at version 8: `migrate` moves it into `jobq`
    /// with every row (ids and the sequence too), and it works on.
    @Test func aStoreInPublicMovesIntoItsSchemaKeepingEveryRow() async throws {
        try await PostgresTestServer.withFreshDatabase { settings in
            let logger = PostgresTestServer.logger
            let connection = try await PostgresConnector(settings: settings, logger: logger).connect()
            let old = Array(PostgresMigration.postgres.prefix(8))
            _ = try await PostgresSchema.migrate(
                on: connection, names: .shared("public"), logger: logger, migrations: old)
            try await connection.query(
                """
                INSERT INTO public.jobs (queue, executor, payload, state, max_attempts, run_at, created_at)
                VALUES ('default', 'test-sum', '{"a":1,"b":2}', 'ready', 3, 0, 0),
                       ('default', 'test-sum', '{"a":5,"b":5}', 'ready', 3, 0, 0)
                """, logger: logger)
            try await connection.close()
            let old8 = try await PostgresSchema.pending(settings)
            #expect(old8.version == 8 && old8.pending.first == "0009_schema_of_its_own.sql")

            let queue = try await JobQueue(postgres: settings, logger: logger)
            #expect(try await queue.jobs().map(\.id) == [1, 2])
            let third = try await queue.enqueue(Sum.self, .init(a: 0, b: 0))
            #expect(third.id == 3, "the sequence moved with its table")
            try await WorkerPool(queue: queue, executors: [Sum()], options: quickOptions()).run()
            #expect(try await queue.jobs(state: .succeeded).count == 3)
            let left = try await PostgresTestServer.rows(
                settings, "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'", as: Int.self)
            #expect(left == [0])
            #expect(try await PostgresSchema.version(settings) == PostgresSchema.latestVersion)
        }
    }

    /// A store written at schema 2 (events without transaction ids) upgrades to 3: its events
    /// keep their id order in the feed, a follower's cursor from before the upgrade goes on
    /// after it without a gap or a repeat, and the store works on.
    @Test func aVersionTwoStoreUpgradesAndItsFeedGoesOn() async throws {
        try await PostgresTestServer.withFreshDatabase { settings in
            let logger = PostgresTestServer.logger
            let connection = try await PostgresConnector(settings: settings, logger: logger).connect()
            defer { Task { try? await connection.close() } }
            let old = Array(PostgresMigration.postgres.prefix(2))
            #expect(
                try await PostgresSchema.migrate(
                    on: connection, names: settings.schemaNames, logger: logger, migrations: old
                ).toVersion == 2)
            for index in 1...5 {
                try await connection.query(
                    PostgresQuery(
                        unsafeSQL:
                            "INSERT INTO events (job_id, kind, created_at) VALUES (\(index), 'enqueued', \(index))"),
                    logger: logger)
            }
            let report = try await PostgresSchema.migrate(on: connection, names: settings.schemaNames, logger: logger)
            #expect(report.fromVersion == 2 && report.applied.first == "0003_event_transactions.sql")
            let queue = try await JobQueue(postgres: settings, logger: logger)
            #expect(try await queue.events(after: 0).map(\.id) == [1, 2, 3, 4, 5], "the old events in id order")
            let job = try await queue.enqueue(try JobRequest(executor: "echo", payloadJSON: "{}"))
            let after = try await queue.events(after: 3)
            #expect(after.map(\.id) == [4, 5, 6] && after.last?.jobID == job.id, "\(after)")
            // The feed's end is read against the cluster's running transactions: one of another
            // test's database, ending as the read starts, can hold it back for a moment.
            try await eventually(.seconds(10), "the feed's end to be the new job's event") {
                try await queue.latestEventID() == 6
            }
        }
    }

    @Test func processesMigratingAtOnceApplyEachStepOnce() async throws {
        try await PostgresTestServer.withFreshDatabase { settings in
            let reports = try await withThrowingTaskGroup(of: PostgresSchema.Report.self) { group in
                for _ in 0..<5 {
                    group.addTask { try await PostgresSchema.migrate(settings, logger: PostgresTestServer.logger) }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(
                reports.flatMap(\.applied) == PostgresMigration.postgres.map(\.name),
                "each migration applied by exactly one of them")
            #expect(reports.allSatisfy { $0.toVersion == PostgresSchema.latestVersion })
            let recorded = try await PostgresTestServer.rows(
                settings, "SELECT count(*) FROM schema_migrations", as: Int.self)
            #expect(recorded == [PostgresMigration.postgres.count])
        }
    }

    @Test func aNewerSchemaIsRefusedAndLeftAlone() async throws {
        try await PostgresTestServer.withFreshDatabase { settings in
            try await PostgresSchema.migrate(settings, logger: PostgresTestServer.logger)
            try await PostgresTestServer.execute(
                settings, "INSERT INTO schema_migrations VALUES (999, '0999_future.sql', 'abc', 0)")
            await #expect {
                try await PostgresSchema.migrate(settings, logger: PostgresTestServer.logger)
            } throws: { error in
                "\(error)".contains("schema version 999, newer than this jobq knows")
                    && "\(error)".contains("upgrade jobq")
            }
            #expect(
                try await PostgresTestServer.rows(settings, "SELECT max(version) FROM schema_migrations", as: Int.self)
                    == [999])
        }
    }

    @Test func anEditedMigrationIsRefused() async throws {
        try await PostgresTestServer.withFreshDatabase { settings in
            try await PostgresSchema.migrate(settings, logger: PostgresTestServer.logger)
            try await PostgresTestServer.execute(
                settings, "UPDATE schema_migrations SET checksum = 'deadbeef' WHERE version = 1")
            await #expect {
                try await PostgresSchema.version(settings)
            } throws: { error in
                "\(error)".contains("was applied with checksum deadbeef") && "\(error)".contains("Migrations/postgres/")
            }
        }
    }

    @Test func aFailingMigrationLeavesNothingBehind() async throws {
        try await PostgresTestServer.withFreshDatabase { settings in
            let good = PostgresMigration(version: 1, name: "0001_a.sql", sql: "CREATE TABLE a (x integer);")
            let bad = PostgresMigration(
                version: 2, name: "0002_b.sql", sql: "CREATE TABLE b (x integer);\nSELECT * FROM no_such_table;")
            let connection = try await PostgresConnector(settings: settings, logger: PostgresTestServer.logger)
                .connect()
            defer { Task { try? await connection.close() } }
            await #expect {
                try await PostgresSchema.migrate(
                    on: connection, names: settings.schemaNames, logger: PostgresTestServer.logger,
                    migrations: [good, bad])
            } throws: { error in
                "\(error)".contains("schema migration 0002_b.sql failed and was rolled back")
                    && "\(error)".contains("no_such_table")
            }
            let tables = try await PostgresTestServer.rows(
                settings, "SELECT tablename FROM pg_tables WHERE schemaname = 'jobq' ORDER BY tablename",
                as: String.self)
            #expect(tables == ["a", "schema_migrations"], "0001 stays, 0002 left nothing")
            #expect(
                try await PostgresTestServer.rows(settings, "SELECT version FROM schema_migrations", as: Int.self) == [
                    1
                ])
        }
    }
}

/// Splitting SQL files into statements; no server needed.
@Suite("PostgreSQL scripts")
struct PostgresScriptTests {
    @Test func semicolonsInQuotesAndCommentsDoNotSplit() throws {
        let sql = """
            -- a comment; still a comment
            CREATE TABLE t (a text DEFAULT ';', "we;ird" int); /* block; comment */
            INSERT INTO t VALUES ('it''s; fine', 1);
            DO $body$ BEGIN PERFORM 1; END $body$;
            SELECT $$;$$, $1::int
            """
        let statements = try PostgresScript.statements(in: sql)
        #expect(statements.count == 4)
        #expect(statements[0].hasSuffix(#"CREATE TABLE t (a text DEFAULT ';', "we;ird" int)"#))
        #expect(statements[1].hasPrefix("/* block; comment */") && statements[1].hasSuffix("VALUES ('it''s; fine', 1)"))
        #expect(statements[2] == "DO $body$ BEGIN PERFORM 1; END $body$")
        #expect(statements[3] == "SELECT $$;$$, $1::int")
    }

    @Test(arguments: ["SELECT 'open", "SELECT /* open", "SELECT $x$ open", #"SELECT "open"#])
    func unclosedQuotesAreRefused(sql: String) {
        #expect(throws: JobQueueError.self) { try PostgresScript.statements(in: sql) }
    }

    @Test func theShippedSchemaSplitsIntoItsStatements() throws {
        let sql = try #require(PostgresMigration.postgres.first).sql
        let statements = try PostgresScript.statements(in: sql)
        // Every statement of the file ends a line with its semicolon.
        #expect(
            statements.count == sql.split(separator: "\n").filter { $0.hasSuffix(";") && !$0.hasPrefix("--") }.count)
        #expect(statements.allSatisfy { $0.contains("CREATE") })
    }
}

/// The shipped files themselves; no server needed.
@Suite("PostgreSQL migrations as shipped")
struct PostgresMigrationFilesTests {
    @Test func versionsRunFromOneWithoutGapsOrRepeats() {
        #expect(PostgresMigration.postgres.map(\.version) == Array(1...PostgresMigration.postgres.count))
    }
}
